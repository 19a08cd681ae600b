package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// delRun runs the binary with --json and fails unless it exits with code.
func delRun(t *testing.T, dir string, code int, args ...string) result {
	t.Helper()
	r := idemsync(t, dir, nil, append(args, "--json")...)
	if r.code != code {
		t.Fatalf("idemsync %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, r.code, code, r.stdout, r.stderr)
	}
	return r
}

// Records deleted at the source between two runs: keep leaves their rows,
// soft marks them (and a key that comes back unchanged is unmarked), hard
// deletes them, at the second full pass that misses them (the first leaves
// them pending: docs/deletions.md, "Two passes"); deleted counts them in
// the run object and in status.
func TestDeletesBetweenRuns(t *testing.T) {
	for _, mode := range []string{"keep", "soft", "hard"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			for _, tg := range delTargets(t, dir) {
				t.Run(tg.name, func(t *testing.T) {
					api := newDelAPI(t, 95)
					job := writeJob(t, dir, tg.name+".yaml", delJob(api.URL, tg, mode, "", "state: "+tg.name+".db\n"))
					if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 0 {
						t.Fatalf("first run deleted rows: %s", r.stdout)
					}
					gone := api.remove(3, 40, 95)
					if mode != "keep" {
						delPending(t, dir, 3, "run", job)
						if n := len(liveIDs(tg.rows(t))); n != 95 {
							t.Fatalf("%d live rows after the first pass to miss 3, want all 95", n)
						}
					}
					r := delRun(t, dir, 0, "run", job)
					rows := tg.rows(t)
					want := map[string]int64{"keep": 0, "soft": 3, "hard": 3}[mode]
					if got := deletedOf(t, r); got != want {
						t.Fatalf("deleted %d, want %d: %s", got, want, r.stdout)
					}
					switch mode {
					case "keep":
						if len(rows) != 95 || len(liveIDs(rows)) != 95 {
							t.Fatalf("keep: %d rows, %d live, want 95", len(rows), len(liveIDs(rows)))
						}
					case "soft":
						if len(rows) != 95 {
							t.Fatalf("soft: %d rows, want 95 (3 marked)", len(rows))
						}
						sameIDs(t, "soft", liveIDs(rows), api.live())
					case "hard":
						if len(rows) != 92 {
							t.Fatalf("hard: %d rows, want 92", len(rows))
						}
						sameIDs(t, "hard", liveIDs(rows), api.live())
					}
					if st := statusOf(t, dir, job); st.LastRun == nil || !strings.Contains(idemsync(t, dir, nil, "status", job, "--json").stdout, `"deleted":`) {
						t.Fatalf("status --json has no deleted count: %+v", st)
					}
					// A third run finds nothing more to delete; a soft mark
					// keeps its first time.
					before := tg.rows(t)
					if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 0 {
						t.Fatalf("third run deleted again: %s", r.stdout)
					}
					after := tg.rows(t)
					for id, m := range before {
						if m != nil && (after[id] == nil || *after[id] != *m) {
							t.Fatalf("soft mark of %d moved from %s to %v", id, *m, after[id])
						}
					}
					// The records come back unchanged: soft unmarks them.
					api.restore(gone...)
					delRun(t, dir, 0, "run", job)
					rows = tg.rows(t)
					sameIDs(t, "after the records came back", liveIDs(rows), api.live())
					if len(rows) != 95 {
						t.Fatalf("%d rows after the records came back, want 95", len(rows))
					}
				})
			}
		})
	}
}

// A run stopped by --max-pages, or failed, never deletes; a full pass
// spanning several invocations sweeps at its end exactly the rows none
// of its pages held, whichever invocation read them (pending, then
// removed by the next pass: docs/deletions.md, "Two passes").
func TestDeletesOnlyAfterCompletedPass(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 60)
			job := writeJob(t, dir, tg.name+".yaml", delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"))
			delRun(t, dir, 0, "run", job)
			api.remove(5, 55)
			for i := 0; i < 3; i++ { // 3 of the 7 pages
				r := delRun(t, dir, 0, "run", job, "--max-pages", "1")
				if !strings.Contains(r.stdout, `"status":"partial"`) || deletedOf(t, r) != 0 {
					t.Fatalf("partial run %d: %s", i, r.stdout)
				}
			}
			api.setFail(6)
			if r := delRun(t, dir, 3, "run", job); deletedOf(t, r) != 0 {
				t.Fatalf("failed run deleted: %s", r.stdout)
			}
			if n := len(tg.rows(t)); n != 60 {
				t.Fatalf("%d rows after partial and failed runs, want all 60", n)
			}
			api.setFail(0)
			r := delPending(t, dir, 2, "run", job)
			if !strings.Contains(r.stdout, `"resumed":true`) {
				t.Fatalf("the pass finished by a later run: %s", r.stdout)
			}
			if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 2 {
				t.Fatalf("the next pass: %s", r.stdout)
			}
			sameIDs(t, "after the pass", liveIDs(tg.rows(t)), api.live())
		})
	}
}

// An API that glitches to an empty list trips max_delete_ratio at the
// second pass that misses every row (the first leaves them pending: a
// glitch that lasts one pass passes unnoticed): exit 1 naming the numbers,
// nothing deleted, and the next run starts a fresh pass;
// --allow-mass-delete lets one sweep over the ratio pass.
func TestDeletesMassDeleteGuard(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 40)
			job := writeJob(t, dir, tg.name+".yaml", delJob(api.URL, tg, "soft", "", "state: "+tg.name+".db\n"))
			delRun(t, dir, 0, "run", job)
			api.setGlitch(true)
			delPending(t, dir, 40, "run", job)
			r := delRun(t, dir, 1, "run", job)
			if !strings.Contains(r.stdout, "sweep would delete 40 of the 40 rows the table held before the pass (100%) > max_delete_ratio 0.5") ||
				!strings.Contains(r.stdout, "to allow it once: idemsync run "+job+" --allow-mass-delete") {
				t.Fatalf("refusal does not name the numbers and the flag:\n%s\n%s", r.stdout, r.stderr)
			}
			if n := len(liveIDs(tg.rows(t))); n != 40 {
				t.Fatalf("%d live rows after the refused sweep, want 40", n)
			}
			if st := statusOf(t, dir, job); st.Status != "failed" {
				t.Fatalf("status after a refused sweep: %s", st.Status)
			}
			api.setGlitch(false)
			r = delRun(t, dir, 0, "run", job)
			if strings.Contains(r.stdout, `"resumed":true`) || !strings.Contains(r.stdout, `"pages":5`) || deletedOf(t, r) != 0 {
				t.Fatalf("the run after a refused sweep is not a fresh full pass: %s", r.stdout)
			}
			// 11 records are left: the walk ends on a short page, which
			// proves the end (a full page then an empty one would not).
			api.remove(idRange(1, 29)...)
			delPending(t, dir, 29, "run", job)
			if r := delRun(t, dir, 1, "run", job); !strings.Contains(r.stdout, "29 of the 40 rows the table held before the pass (72%)") {
				t.Fatalf("72%% deletion not refused: %s", r.stdout)
			}
			r = delRun(t, dir, 0, "run", job, "--allow-mass-delete")
			if deletedOf(t, r) != 29 {
				t.Fatalf("--allow-mass-delete: %s", r.stdout)
			}
			sameIDs(t, "after --allow-mass-delete", liveIDs(tg.rows(t)), api.live())
		})
	}
}

// Tombstones delete (hard) or mark (soft) their row in the page's own
// write, on an incremental run too, and count as deleted.
func TestDeletesTombstones(t *testing.T) {
	for _, mode := range []string{"soft", "hard"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			for _, tg := range delTargets(t, dir) {
				t.Run(tg.name, func(t *testing.T) {
					api := newDelAPI(t, 30)
					inc := "incremental:\n  field: updated_at\n  param: updated_since\n  overlap: 1s\n"
					job := writeJob(t, dir, tg.name+".yaml", delJob(api.URL, tg, mode, "  tombstone: {field: deleted, value: true}\n", "state: "+tg.name+".db\n"+inc))
					delRun(t, dir, 0, "run", job)
					api.set(7, "gone", true)
					api.set(8, "gone", true)
					prom := filepath.Join(dir, tg.name+".prom")
					r := delRun(t, dir, 0, "run", job, "--metrics-file", prom)
					if deletedOf(t, r) != 2 {
						t.Fatalf("tombstones: %s", r.stdout)
					}
					if m, err := os.ReadFile(prom); err != nil || !regexp.MustCompile(`(?m)^idemsync_records_total\{[^}]*outcome="deleted"[^}]*\} 2$`).Match(m) {
						t.Fatalf("metrics do not count 2 deleted: %v\n%s", err, m)
					}
					rows := tg.rows(t)
					sameIDs(t, "after tombstones", liveIDs(rows), api.live())
					if want := map[string]int{"soft": 30, "hard": 28}[mode]; len(rows) != want {
						t.Fatalf("%d rows, want %d", len(rows), want)
					}
				})
			}
		})
	}
}

// An incremental run cannot see a deletion; run --full and full_every make
// a full pass that does, and windowed or replay runs never delete.
func TestDeletesFullPassOfIncrementalJob(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 30)
			inc := "incremental:\n  field: updated_at\n  param: updated_since\n  overlap: 1s\n"
			job := writeJob(t, dir, tg.name+".yaml", delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"+inc))
			delRun(t, dir, 0, "run", job)
			api.remove(2, 3)
			if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 0 {
				t.Fatalf("incremental run deleted: %s", r.stdout)
			}
			if r := delRun(t, dir, 0, "replay", job, "--from", "1"); deletedOf(t, r) != 0 {
				t.Fatalf("replay deleted: %s", r.stdout)
			}
			if n := len(tg.rows(t)); n != 30 {
				t.Fatalf("%d rows, want 30 before the full pass", n)
			}
			api.mu.Lock()
			api.since = nil
			api.mu.Unlock()
			delPending(t, dir, 2, "run", job, "--full")
			r := delRun(t, dir, 0, "run", job, "--full")
			if deletedOf(t, r) != 2 {
				t.Fatalf("--full: %s", r.stdout)
			}
			api.mu.Lock()
			for _, s := range api.since {
				if s != "" {
					t.Errorf("a full pass without initial sent updated_since=%s", s)
				}
			}
			api.mu.Unlock()
			sameIDs(t, "after --full", liveIDs(tg.rows(t)), api.live())

			// full_every: the first run of the job is a full pass, the next
			// one (within full_every) is not.
			// (job every replaces job del on its table: idemsync claim hands
			// the table over.)
			job2 := writeJob(t, dir, tg.name+"-every.yaml", strings.Replace(delJob(api.URL, tg, "hard", "", "state: "+tg.name+"-every.db\n"+inc+"  full_every: 1h\n"), "name: del", "name: every", 1))
			delRun(t, dir, 0, "claim", job2)
			delRun(t, dir, 0, "run", job2)
			api.remove(4)
			if r := delRun(t, dir, 0, "run", job2); deletedOf(t, r) != 0 {
				t.Fatalf("a run within full_every deleted: %s", r.stdout)
			}
			time.Sleep(1100 * time.Millisecond) // the last full pass is now more than 1s old
			job3 := writeJob(t, dir, tg.name+"-every.yaml", strings.Replace(delJob(api.URL, tg, "hard", "", "state: "+tg.name+"-every.db\n"+inc+"  full_every: 1s\n"), "name: del", "name: every", 1))
			delPending(t, dir, 1, "run", job3)
			time.Sleep(1100 * time.Millisecond)
			r = delRun(t, dir, 0, "run", job3)
			if deletedOf(t, r) != 1 {
				t.Fatalf("full_every 1s after a pass more than 1s old: %s", r.stdout)
			}
			sameIDs(t, "after full_every", liveIDs(tg.rows(t)), api.live())
		})
	}
}

// A pass with a page whose bad record went to the dead letters has an
// incomplete set of keys (the bad record's key is unknown): it completes,
// deletes nothing and says why; the next complete pass leaves the row
// pending (the last pass that proved saw it) and the one after deletes.
func TestDeletesIncompleteSetDeletesNothing(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 30)
			job := writeJob(t, dir, tg.name+".yaml", delJob(api.URL, tg, "hard", "  on_bad_record: skip\n", "state: "+tg.name+".db\n"))
			delRun(t, dir, 0, "run", job)
			api.remove(9)
			api.mu.Lock()
			r12 := api.recs[12]
			r12.UpdatedAt = "not a time"
			api.recs[12] = r12
			api.mu.Unlock()
			r := delRun(t, dir, 0, "run", job)
			if deletedOf(t, r) != 0 || !strings.Contains(r.stderr, "this full pass deletes nothing") {
				t.Fatalf("a pass with a dead letter deleted, or did not say why not: %s\n%s", r.stdout, r.stderr)
			}
			if n := len(tg.rows(t)); n != 30 {
				t.Fatalf("%d rows, want 30", n)
			}
			api.set(12, "fixed", false)
			delPending(t, dir, 1, "run", job)
			if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 1 {
				t.Fatalf("the next complete pass: %s", r.stdout)
			}
			sameIDs(t, "after a complete pass", liveIDs(tg.rows(t)), api.live())
		})
	}
}

// A windowed run (incremental.step) never deletes; run --full walks such a
// job in one window and sweeps.
func TestDeletesWindowedRunsNeverDelete(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 30)
			inc := "incremental:\n  field: updated_at\n  param: updated_since\n  end_param: updated_before\n  initial: \"2023-12-25T00:00:00Z\"\n  step: 7d\n"
			job := writeJob(t, dir, tg.name+".yaml", delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"+inc))
			delRun(t, dir, 0, "run", job)
			api.remove(1, 2)
			if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 0 {
				t.Fatalf("a windowed run deleted: %s", r.stdout)
			}
			if n := len(tg.rows(t)); n != 30 {
				t.Fatalf("%d rows after a windowed run, want 30", n)
			}
			delPending(t, dir, 2, "run", job, "--full")
			if r := delRun(t, dir, 0, "run", job, "--full"); deletedOf(t, r) != 2 {
				t.Fatalf("--full on a windowed job: %s", r.stdout)
			}
			sameIDs(t, "after --full", liveIDs(tg.rows(t)), api.live())
		})
	}
}
