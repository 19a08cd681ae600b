package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// requests is how many pages api served.
func (a *delAPI) requests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.since)
}

// idsAPI serves the records with ids from..to.
func idsAPI(t *testing.T, from, to int) *delAPI {
	t.Helper()
	a := newDelAPI(t, to)
	a.remove(idRange(1, from-1)...)
	return a
}

// sameTableJob is a job file of two resources, a and b, reading two APIs
// into one table, with deletes da and db.
func sameTableJob(tg delTarget, apiA, apiB *delAPI, da, db string) string {
	return fmt.Sprintf(`name: shop
state: shop.db
defaults:
  source: {records: data, timeout: 5s}
  pagination: {style: page, size_param: per_page, size: 10}
  retry: {attempts: 2, min_wait: 10ms, max_wait: 50ms}
  target:
    url: %s
    table: %s
    key: [id]
    columns: {id: {path: id, type: integer}, v: v}
resources:
  - name: a
    source: {url: %s/items}
    target: {deletes: %s}
  - name: b
    source: {url: %s/items}
    target: {deletes: %s}
`, tg.url, tg.table, apiA.URL, da, apiB.URL, db)
}

// Two resources of one file with deletes: hard on one table deleted each
// other's rows on every run (an even split is exactly 50%, under
// max_delete_ratio); validate said "valid". Both refuse now, before
// anything is fetched, naming the other resource; keep + keep share.
func TestDeletesTwoResourcesOneTable(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			apiA, apiB := idsAPI(t, 1, 10), idsAPI(t, 11, 20)
			for _, mode := range [][2]string{{"hard", "hard"}, {"keep", "soft"}} {
				job := writeJob(t, dir, tg.name+"-"+mode[1]+".yaml", sameTableJob(tg, apiA, apiB, mode[0], mode[1]))
				for _, args := range [][]string{{"validate", job}, {"run", job}, {"run", job}} {
					r := idemsync(t, dir, nil, args...)
					if r.code != 2 || !strings.Contains(r.stderr, "resources a and b both write table "+tg.table) {
						t.Fatalf("%v with deletes %v: exit %d, want 2 naming both resources\nstdout: %s\nstderr: %s", args, mode, r.code, r.stdout, r.stderr)
					}
				}
			}
			if n := apiA.requests() + apiB.requests(); n != 0 {
				t.Fatalf("%d pages fetched by refused runs", n)
			}
			if rows := tg.rows(t); len(rows) != 0 {
				t.Fatalf("refused runs wrote %d rows", len(rows))
			}
			job := writeJob(t, dir, tg.name+"-keep.yaml", sameTableJob(tg, apiA, apiB, "keep", "keep"))
			runJob(t, dir, 0, "run", job)
			runJob(t, dir, 0, "run", job)
			sameIDs(t, "keep + keep", liveIDs(tg.rows(t)), mergeLive(apiA.live(), apiB.live()))
		})
	}
}

// mergeLive is the union of two sources' live records.
func mergeLive(a, b map[int]string) map[int]string {
	out := map[int]string{}
	for id, v := range a {
		out[id] = v
	}
	for id, v := range b {
		out[id] = v
	}
	return out
}

// Two job files (two state files, and the same job name) on one table: the
// table belongs to the first that registered in the target database; the
// other is refused by run and validate --connect with exit 2 naming the
// owner and its state file, before it fetches a page, whether it deletes
// or keeps. idemsync claim hands the table over; keep jobs share.
func TestDeletesTwoJobFilesOneTable(t *testing.T) {
	skipWithPostgresState(t, "the refusals name the owner's state file")
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			apiA, apiB := idsAPI(t, 1, 10), idsAPI(t, 11, 20)
			for _, sub := range []string{"x", "y"} {
				if err := os.MkdirAll(filepath.Join(dir, tg.name+sub), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			target := tg
			if tg.name == "sqlite" {
				target.url = "sqlite:" + filepath.Join(dir, "out.db")
			}
			jobA := writeJob(t, filepath.Join(dir, tg.name+"x"), "del.yaml", withTotal(delJob(apiA.URL, target, "hard", "", "")))
			jobB := writeJob(t, filepath.Join(dir, tg.name+"y"), "del.yaml", withTotal(delJob(apiB.URL, target, "hard", "", "")))
			jobBKeep := writeJob(t, filepath.Join(dir, tg.name+"y"), "keep.yaml", delJob(apiB.URL, target, "keep", "", ""))
			delRun(t, dir, 0, "run", jobA)
			owner := "job del (state file " + realPathOf(t, filepath.Join(dir, tg.name+"x", ".idemsync", "state.db")) + ")"
			before := apiB.requests()
			for _, job := range []string{jobB, jobBKeep} {
				for _, args := range [][]string{{"run", job}, {"validate", "--connect", job}} {
					r := idemsync(t, dir, nil, args...)
					if r.code != 2 || !strings.Contains(r.stderr, owner) || !strings.Contains(r.stderr, "idemsync claim "+job) {
						t.Fatalf("%v: exit %d, want 2 naming %s and the claim command\nstdout: %s\nstderr: %s", args, r.code, owner, r.stdout, r.stderr)
					}
				}
			}
			// validate --connect fetches the first page; run fetches nothing.
			if n := apiB.requests() - before; n != 2 {
				t.Fatalf("%d pages fetched by the refused jobs, want 2 (validate --connect's)", n)
			}
			sameIDs(t, "after the refused jobs", liveIDs(tg.rows(t)), apiA.live())
			delRun(t, dir, 0, "run", jobA) // the owner runs on

			// The operator moves the table to job B.
			if r := idemsync(t, dir, nil, "claim", jobB); r.code != 0 {
				t.Fatalf("claim: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if r := idemsync(t, dir, nil, "run", jobA); r.code != 2 || !strings.Contains(r.stderr, "job del (state file "+realPathOf(t, filepath.Join(dir, tg.name+"y", ".idemsync", "state.db"))) {
				t.Fatalf("the former owner after claim: exit %d\n%s", r.code, r.stderr)
			}
			// Job B's state file knows no pass of its own: its first pass
			// leaves job A's rows pending, its second removes them.
			delPending(t, dir, 10, "run", jobB)
			r := delRun(t, dir, 0, "run", jobB, "--allow-mass-delete")
			if deletedOf(t, r) != 10 {
				t.Fatalf("the new owner's first pass: %s", r.stdout)
			}
			sameIDs(t, "after claim", liveIDs(tg.rows(t)), apiB.live())
		})
	}
}

// Jobs with deletes: keep in two job files share a table; one that turns
// deletes on is refused while the other is registered.
func TestDeletesKeepJobsShareTable(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			apiA, apiB := idsAPI(t, 1, 10), idsAPI(t, 11, 20)
			jobA := writeJob(t, dir, tg.name+"-a.yaml", strings.Replace(delJob(apiA.URL, tg, "keep", "", "state: "+tg.name+"-a.db\n"), "name: del", "name: a", 1))
			jobB := writeJob(t, dir, tg.name+"-b.yaml", strings.Replace(delJob(apiB.URL, tg, "keep", "", "state: "+tg.name+"-b.db\n"), "name: del", "name: b", 1))
			for range 2 {
				delRun(t, dir, 0, "run", jobA)
				delRun(t, dir, 0, "run", jobB)
			}
			delRun(t, dir, 0, "validate", "--connect", jobB)
			sameIDs(t, "keep + keep", liveIDs(tg.rows(t)), mergeLive(apiA.live(), apiB.live()))
			hardB := writeJob(t, dir, tg.name+"-b.yaml", strings.Replace(delJob(apiB.URL, tg, "hard", "", "state: "+tg.name+"-b.db\n"), "name: del", "name: b", 1))
			if r := idemsync(t, dir, nil, "run", hardB); r.code != 2 || !strings.Contains(r.stderr, "job a (state file") {
				t.Fatalf("a keep job turning deletes on beside another writer: exit %d\n%s", r.code, r.stderr)
			}
			sameIDs(t, "after the refusal", liveIDs(tg.rows(t)), mergeLive(apiA.live(), apiB.live()))
		})
	}
}

// realPathOf is path with its folder's symlinks resolved (t.TempDir may
// sit under a symlink).
func realPathOf(t *testing.T, path string) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, filepath.Base(path))
}

// An API that glitches from ids 1–10 to ids 101–110 got "inserted 10,
// deleted 10", measured as 50% of the 20 rows the table held after the
// pass's own inserts: exit 0, every row that existed before deleted. The
// ratio is over the live rows the table held before the pass: 100%,
// refused, nothing deleted (at the second swapped pass: the first leaves
// the rows pending, docs/deletions.md "Two passes").
func TestDeletesRatioOverRowsBeforeThePass(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 10)
			job := writeJob(t, dir, tg.name+".yaml", withTotal(delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n")))
			delRun(t, dir, 0, "run", job)
			old := api.remove(idRange(1, 10)...)
			for id := 101; id <= 110; id++ {
				api.set(id, "swapped", false)
			}
			delPending(t, dir, 10, "run", job)
			r := delRun(t, dir, 1, "run", job)
			if !strings.Contains(r.stdout, "sweep would delete 10 of the 10 rows the table held before the pass (100%) > max_delete_ratio 0.5") {
				t.Fatalf("the swap is not refused as a mass deletion:\n%s\n%s", r.stdout, r.stderr)
			}
			for id := 1; id <= 10; id++ {
				if !liveIDs(tg.rows(t))[id] {
					t.Fatalf("row %d deleted by a refused sweep", id)
				}
			}
			// The API recovers: a fresh pass leaves the glitch's rows pending
			// (the pass before saw them), the next removes them, 10 of the
			// 20 before it.
			api.remove(idRange(101, 110)...)
			api.restore(old...)
			delPending(t, dir, 10, "run", job)
			if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 10 {
				t.Fatalf("after the API recovered: %s", r.stdout)
			}
			sameIDs(t, "after the API recovered", liveIDs(tg.rows(t)), api.live())
			// A pass that adds 10 rows and loses 6 of 10: 60% of the rows
			// before, refused, although 6 of the 20 after is 30%.
			api.remove(idRange(1, 6)...)
			for id := 201; id <= 210; id++ {
				api.set(id, "new", false)
			}
			delPending(t, dir, 6, "run", job)
			if r := delRun(t, dir, 1, "run", job); !strings.Contains(r.stdout, "6 of the 10 rows") {
				t.Fatalf("60%% of the rows before the pass not refused: %s", r.stdout)
			}
			sameIDs(t, "after the refusal", liveIDs(tg.rows(t)), mergeLive(api.live(), map[int]string{1: "", 2: "", 3: "", 4: "", 5: "", 6: ""}))
		})
	}
}

// --allow-mass-delete lifted max_delete_ratio for every resource of a file
// at once, and the refusal's hint did not mention --resource. It lifts it
// only for the resources named with --resource, is refused (exit 2)
// without one in a file with several, and the refusal names the exact
// command.
func TestDeletesAllowMassDeleteScoped(t *testing.T) {
	dir, dirB := t.TempDir(), t.TempDir()
	tgsA, tgsB := delTargets(t, dir), delTargets(t, dirB)
	for i := range tgsA {
		tgA, tgB := tgsA[i], tgsB[i]
		if tgB.name == "sqlite" {
			tgB.url = "sqlite:" + filepath.Join(dirB, "out.db")
		}
		t.Run(tgA.name, func(t *testing.T) {
			apiA, apiB := newDelAPI(t, 20), newDelAPI(t, 20)
			job := writeJob(t, dir, tgA.name+"-scoped.yaml", fmt.Sprintf(`name: shop
state: %s-scoped.db
defaults:
  source: {records: data, timeout: 5s}
  pagination: {style: page, size_param: per_page, size: 10}
  retry: {attempts: 2, min_wait: 10ms, max_wait: 50ms}
  target: {key: [id], columns: {id: {path: id, type: integer}, v: v}, deletes: hard}
resources:
  - name: a
    source: {url: %s/items}
    target: {url: %q, table: %s}
  - name: b
    source: {url: %s/items}
    target: {url: %q, table: %s}
`, tgA.name, apiA.URL, tgA.url, tgA.table, apiB.URL, tgB.url, tgB.table))
			runJob(t, dir, 0, "run", job)
			apiA.setGlitch(true)
			apiB.setGlitch(true)
			runJob(t, dir, 0, "run", job) // the first pass to miss the rows keeps them pending
			r := idemsync(t, dir, nil, "run", job)
			if r.code != 1 || !strings.Contains(r.stderr, "to allow it once: idemsync run "+job+" --resource a --allow-mass-delete") ||
				!strings.Contains(r.stderr, "idemsync run "+job+" --resource b --allow-mass-delete") {
				t.Fatalf("the refusals do not name the command with --resource: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			r = idemsync(t, dir, nil, "run", job, "--allow-mass-delete")
			if r.code != 2 || !strings.Contains(r.stderr, "--allow-mass-delete: job shop has several resources") {
				t.Fatalf("--allow-mass-delete without --resource: exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if a, b := len(liveIDs(tgA.rows(t))), len(liveIDs(tgB.rows(t))); a != 20 || b != 20 {
				t.Fatalf("after --allow-mass-delete without --resource: %d and %d live rows, want 20 and 20", a, b)
			}
			runJob(t, dir, 0, "run", job, "--resource", "a", "--allow-mass-delete")
			if a, b := len(liveIDs(tgA.rows(t))), len(liveIDs(tgB.rows(t))); a != 0 || b != 20 {
				t.Fatalf("--resource a --allow-mass-delete: %d and %d live rows, want 0 and 20", a, b)
			}
			if r := idemsync(t, dir, nil, "run", job); r.code != 1 || len(liveIDs(tgB.rows(t))) != 20 {
				t.Fatalf("b's guard was lifted by a's flag: exit %d\n%s", r.code, r.stderr)
			}
		})
	}
}

// A glitch that lasts two runs: the first swapped pass is refused but its
// rows stay in the table, doubling it, so the second swapped pass removed
// every row that existed before the glitch as "50% of the table" (exit 0
// under the default ratio). After a refused sweep the rows the refused
// passes wrote do not count: the next pass is measured against the rows
// the table held before the first refused pass, and may remove the
// glitch's own rows freely once the API recovers.
func TestDeletesRefusedPassRowsDoNotDiluteTheRatio(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 10)
			job := writeJob(t, dir, tg.name+"-dilute.yaml", withTotal(delJob(api.URL, tg, "hard", "", "state: "+tg.name+"-dilute.db\n")))
			delRun(t, dir, 0, "run", job)
			old := api.remove(idRange(1, 10)...)
			for id := 101; id <= 115; id++ { // two pages
				api.set(id, "swapped", false)
			}
			delPending(t, dir, 10, "run", job) // the first swapped pass keeps the rows pending
			for i := 1; i <= 2; i++ {
				r := delRun(t, dir, 1, "run", job)
				if !strings.Contains(r.stdout, "sweep would delete 10 of the 10 rows the table held before the pass (100%)") {
					t.Fatalf("swapped pass %d is not refused against the rows before the glitch:\n%s\n%s", i, r.stdout, r.stderr)
				}
				for id := 1; id <= 10; id++ {
					if !liveIDs(tg.rows(t))[id] {
						t.Fatalf("swapped pass %d: row %d deleted", i, id)
					}
				}
			}
			// A pass of the glitch cut short, then abandoned by --restart:
			// the chain's measure goes on.
			delRun(t, dir, 0, "run", job, "--max-pages", "1")
			r := delRun(t, dir, 1, "run", job, "--restart")
			if !strings.Contains(r.stdout, "sweep would delete 10 of the 10 rows the table held before the pass (100%)") {
				t.Fatalf("the swapped pass after --restart is not refused against the rows before the glitch:\n%s\n%s", r.stdout, r.stderr)
			}
			api.remove(idRange(101, 115)...)
			api.restore(old...)
			// The first pass after the glitch leaves the glitch's rows
			// pending (the first swapped pass saw them) and keeps the
			// chain's measure for the next, which removes them.
			delPending(t, dir, 15, "run", job)
			if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 15 {
				t.Fatalf("after the API recovered the glitch's rows are not removed: %s", r.stdout)
			}
			sameIDs(t, "after the API recovered", liveIDs(tg.rows(t)), api.live())
		})
	}
}
