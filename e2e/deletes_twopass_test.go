package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A row is removed (or marked) only when two consecutive full passes that
// prove absence both missed its key (docs/deletions.md, "Two passes").
// These are the two ways one proving pass alone removed live rows.

// pendingOf reads pending_deletes of a --json run object.
func pendingOf(t *testing.T, r result) int64 {
	t.Helper()
	var v struct {
		Pending *int64 `json:"pending_deletes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Pending == nil {
		t.Fatalf("no pending_deletes in %s (%v)", r.stdout, err)
	}
	return *v.Pending
}

// swapTo replaces every record of a by ids from..to (an API serving its
// records under other keys).
func (a *delAPI) swapTo(from, to int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recs = map[int]delRecord{}
	for id := from; id <= to; id++ {
		a.put(id, fmt.Sprintf("v%d", id), false)
	}
}

// Limit (a) of docs/deletions.md before the two-pass rule: a pass served
// under other keys whose sweep was skipped (no proof) writes the swapped
// rows; a second swapped pass that proves its end met a table nearly
// twice its size, and removing every row from before the glitch read as
// 45%, under max_delete_ratio. Now that pass removes nothing (the pass
// before the glitch saw those keys); once the source recovers, the
// glitch's rows go after two passes that miss them.
func TestSweepKeySwapAfterSkippedPassKeepsRows(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 25) // short last page: the pass proves
			job := writeJob(t, dir, tg.name+".yaml", delJob(api.URL, tg, "hard", "  max_delete_ratio: 0.6\n", "state: "+tg.name+".db\n"))
			delRun(t, dir, 0, "run", job)
			orig := api.live()
			// Glitch, pass 1: 30 records under other keys, an empty page
			// after a full one and no count: no proof, the sweep is skipped.
			api.swapTo(101, 130)
			wantSkipped(t, delRun(t, dir, 0, "run", job), "empty")
			// Glitch, pass 2: 35 swapped records, a short last page: proves.
			api.swapTo(101, 135)
			r := delRun(t, dir, 0, "run", job)
			if d := deletedOf(t, r); d != 0 {
				t.Fatalf("a swapped pass deleted %d rows of records that still exist: %s", d, r.stdout)
			}
			live := liveIDs(tg.rows(t))
			for id := range orig {
				if !live[id] {
					t.Fatalf("row %d, live at the source before and after the glitch, was removed by the swapped pass", id)
				}
			}
			// The source recovers: the first pass that misses the glitch's
			// rows makes them pending, the second removes them.
			api.swapTo(1, 25)
			r = delRun(t, dir, 0, "run", job)
			if d, p := deletedOf(t, r), pendingOf(t, r); d != 0 || p != 35 {
				t.Fatalf("first pass after the glitch: deleted %d, pending %d, want 0 and 35: %s", d, p, r.stdout)
			}
			r = delRun(t, dir, 0, "run", job)
			if d, p := deletedOf(t, r), pendingOf(t, r); d != 35 || p != 0 {
				t.Fatalf("second pass after the glitch: deleted %d, pending %d, want 35 and 0: %s", d, p, r.stdout)
			}
			sameIDs(t, "after the glitch's rows were removed", liveIDs(tg.rows(t)), api.live())
		})
	}
}

// Limit (b) of docs/deletions.md before the two-pass rule: on a page walk,
// a record removed before the walk's position and one added after it (the
// total does not move) push a live record back across a page already
// read: the pass does not list it, and its sweep removed it. The same
// happens when the removal falls between two invocations of one pass.
// Now the record is only pending; the next pass sees it and keeps it. The
// record really removed was read by the shifted pass's first page (before
// it went): the next pass is the first to miss it, and the one after that
// removes it.
func TestSweepKeepsRecordPushedBackByShift(t *testing.T) {
	for _, between := range []bool{false, true} {
		name := "during"
		if between {
			name = "between"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, tg := range delTargets(t, dir) {
				t.Run(tg.name, func(t *testing.T) {
					api := newDelAPI(t, 35)
					job := writeJob(t, dir, tg.name+".yaml", withTotal(delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n")))
					delRun(t, dir, 0, "run", job)
					shift := func() {
						delete(api.recs, 5)
						api.put(36, "v36", false)
					}
					var r result
					if between {
						delRun(t, dir, 0, "run", job, "--max-pages", "1")
						api.mu.Lock()
						shift()
						api.mu.Unlock()
						r = delRun(t, dir, 0, "run", job)
					} else {
						api.mu.Lock()
						api.served = func(a *delAPI, start int) {
							if start == 0 {
								shift()
								a.served = nil
							}
						}
						api.mu.Unlock()
						r = delRun(t, dir, 0, "run", job)
					}
					if rows := tg.rows(t); rows[11] != nil || !func() bool { _, ok := rows[11]; return ok }() {
						t.Fatalf("row 11, live at the source, was removed after a shifted walk: %s", r.stdout)
					}
					if d, p := deletedOf(t, r), pendingOf(t, r); d != 0 || p != 1 {
						t.Fatalf("shifted pass: deleted %d, pending %d, want 0 and 1 (id 11): %s", d, p, r.stdout)
					}
					// status shows the pending row, --json and text; the
					// metrics file has it as a gauge.
					if st := idemsync(t, dir, nil, "status", job, "--json").stdout; !strings.Contains(st, `"pending_deletes":1`) {
						t.Errorf("status --json does not show pending_deletes 1: %s", st)
					}
					if st := idemsync(t, dir, nil, "status", job).stdout; !strings.Contains(st, "1 row this pass did not see") {
						t.Errorf("status does not show the pending row: %s", st)
					}
					prom := filepath.Join(dir, tg.name+"-"+name+".prom")
					delRun(t, dir, 5, "resume", job, "--metrics-file", prom)
					if m, err := os.ReadFile(prom); err != nil || !regexp.MustCompile(`(?m)^idemsync_pending_deletes\{[^}]*\} 1$`).Match(m) {
						t.Errorf("the metrics file has no idemsync_pending_deletes 1: %v\n%s", err, m)
					}
					r = delRun(t, dir, 0, "run", job)
					if d, p := deletedOf(t, r), pendingOf(t, r); d != 0 || p != 1 {
						t.Fatalf("next pass: deleted %d, pending %d, want 0 and 1 (id 5): %s", d, p, r.stdout)
					}
					if _, ok := tg.rows(t)[11]; !ok {
						t.Fatal("row 11 removed by the pass that saw it again")
					}
					r = delRun(t, dir, 0, "run", job)
					if d, p := deletedOf(t, r), pendingOf(t, r); d != 1 || p != 0 {
						t.Fatalf("third pass: deleted %d, pending %d, want 1 (id 5) and 0: %s", d, p, r.stdout)
					}
					sameIDs(t, "after the next pass", liveIDs(tg.rows(t)), api.live())
				})
			}
		})
	}
}

// delPending runs args to exit 0 and fails unless that full pass removed
// nothing and left want rows pending: the first proving pass to miss a
// row keeps it (docs/deletions.md, "Two passes").
func delPending(t *testing.T, dir string, want int64, args ...string) result {
	t.Helper()
	r := delRun(t, dir, 0, args...)
	if d, p := deletedOf(t, r), pendingOf(t, r); d != 0 || p != want {
		t.Fatalf("idemsync %v: deleted %d, pending %d; want 0 and %d (the first pass to miss a row keeps it)\n%s", args, d, p, want, r.stdout)
	}
	return r
}

// A shift that spans two invocations of one offset walk (a record added
// before the position between them) is seen only when the sweep loads the
// pass's keys: the sweep is skipped there, the pass completes with exit 0
// and nothing pending, and no row is touched. (The two-pass bookkeeping
// once assumed every sweep it reached had run, and crashed here.)
func TestSweepSkippedOnShiftAcrossInvocations(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 35)
			job := writeJob(t, dir, tg.name+".yaml", withPagination(delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"), offsetNoTotal))
			delRun(t, dir, 0, "run", job)
			api.remove(20)
			delRun(t, dir, 0, "run", job, "--max-pages", "1")
			api.set(0, "v0", false) // before the position: offset 10 now starts with id 10 again
			r := delRun(t, dir, 0, "run", job)
			wantSkipped(t, r, "twice")
			if strings.Contains(r.stdout, "pending_deletes") {
				t.Errorf("a pass whose sweep was skipped reports pending rows: %s", r.stdout)
			}
			// 1..35: id 20 (gone at the source) kept by the skipped sweep;
			// id 0 was added on the page already read.
			if rows := tg.rows(t); len(rows) != 35 || !liveIDs(rows)[20] {
				t.Fatalf("%d rows after a skipped sweep (20 live: %v), want 35 with 20", len(rows), liveIDs(rows)[20])
			}
		})
	}
}

// A pass served under other keys (a glitch) that proves its end misses
// every row from before it; the first pass after the source recovers,
// shifted across two of its invocations, misses one live record more.
// Both passes missed that record's key, yet the glitch's misses were not
// a picture of the source: the recovered pass lists again nearly every
// row the glitch missed. Before, that pass removed the live row; now a
// pass that lists again more of the rows the previous proving pass
// missed than it misses removes nothing (docs/deletions.md, "Two
// passes"), and the next pass, which sees the record, keeps it.
func TestSweepShiftAfterKeySwapKeepsRow(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 35)
			job := writeJob(t, dir, tg.name+".yaml", withTotal(delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n")))
			delRun(t, dir, 0, "run", job)
			// The glitch: the same count under other keys, a proving pass
			// that misses every row from before it (pending, none removed).
			api.swapTo(101, 135)
			delPending(t, dir, 35, "run", job)
			// The source recovers; its pass is continued after one page,
			// and between the two invocations a record before the position
			// goes and one is added after it: id 11 is pushed back across
			// the page already read.
			api.swapTo(1, 35)
			delRun(t, dir, 0, "run", job, "--max-pages", "1")
			api.mu.Lock()
			delete(api.recs, 5)
			api.put(36, "v36", false)
			api.mu.Unlock()
			r := delRun(t, dir, 0, "run", job)
			if _, ok := liveIDs(tg.rows(t))[11]; !ok {
				t.Fatalf("row 11, live at the source throughout, was removed by the pass after a glitch: %s", r.stdout)
			}
			if d := deletedOf(t, r); d != 0 {
				t.Fatalf("the pass after the glitch deleted %d rows; want 0 (it lists again nearly every row the glitch missed): %s", d, r.stdout)
			}
			// The next pass trusts its predecessor: the glitch's rows (and
			// id 5, first missed by the recovered pass) go at the one after.
			r = delRun(t, dir, 0, "run", job)
			if _, ok := liveIDs(tg.rows(t))[11]; !ok {
				t.Fatal("row 11 removed by the pass that saw it again")
			}
			if d := deletedOf(t, r); d != 35 {
				t.Fatalf("second pass after the glitch: deleted %d, want the glitch's 35: %s", d, r.stdout)
			}
			delRun(t, dir, 0, "run", job)
			sameIDs(t, "after the glitch's rows and id 5 were removed", liveIDs(tg.rows(t)), api.live())
		})
	}
}
