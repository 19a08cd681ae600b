package e2e

import (
	"strings"
	"testing"
)

// Attacks on "a previous pass that was no picture of the source"
// (docs/deletions.md, "Two passes").

// shiftBetween runs a pass of job across two invocations with a shift
// between them: after its first page, id 5 goes and id 36 is added, so
// id 11 is pushed back across the page already read and no page lists it.
func shiftBetween(t *testing.T, dir string, api *delAPI, job string) result {
	t.Helper()
	delRun(t, dir, 0, "run", job, "--max-pages", "1")
	api.mu.Lock()
	delete(api.recs, 5)
	api.put(36, "v36", false)
	api.mu.Unlock()
	return delRun(t, dir, 0, "run", job)
}

// The other order: a shifted pass misses id 11 (pending), then the API
// serves its records under other keys for a pass that proves its end.
// That pass misses every row; id 11 was missed by both passes, though it
// never left the source. Before, the swapped pass removed it; now a pass
// that is the first to miss more rows than max_delete_ratio allows
// removing removes nothing (docs/deletions.md, "Two passes"). The
// glitch's rows and id 5 then go with the same ratio (0.6: they are
// 36 of the 71 rows once the source recovers).
func TestSweepKeySwapAfterShiftKeepsRow(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 35)
			job := writeJob(t, dir, tg.name+".yaml", withTotal(delJob(api.URL, tg, "hard", "  max_delete_ratio: 0.6\n", "state: "+tg.name+".db\n")))
			delRun(t, dir, 0, "run", job)
			if r := shiftBetween(t, dir, api, job); pendingOf(t, r) != 1 {
				t.Fatalf("shifted pass: pending %d, want 1 (id 11): %s", pendingOf(t, r), r.stdout)
			}
			orig := api.live()
			api.swapTo(101, 135)
			r := delRun(t, dir, 0, "run", job)
			if _, ok := liveIDs(tg.rows(t))[11]; !ok {
				t.Fatalf("row 11, live at the source throughout, was removed by the swapped pass: %s", r.stdout)
			}
			if d, p := deletedOf(t, r), pendingOf(t, r); d != 0 || p != 36 {
				t.Fatalf("swapped pass: deleted %d, pending %d; want 0 and 36 (every row from before it)", d, p)
			}
			if !strings.Contains(r.stderr, "is the first to miss more rows than max_delete_ratio allows removing") || !strings.Contains(r.stderr, "first_missed=35") {
				t.Errorf("no log line names why the swapped pass removed nothing: %s", r.stderr)
			}
			// The source recovers: the glitch's rows go, id 5 too.
			api.mu.Lock()
			api.recs = map[int]delRecord{}
			for id := range orig {
				api.put(id, "v", false)
			}
			api.mu.Unlock()
			delRun(t, dir, 0, "run", job)
			delRun(t, dir, 0, "run", job)
			delRun(t, dir, 0, "run", job)
			sameIDs(t, "after the glitch", liveIDs(tg.rows(t)), api.live())
		})
	}
}
