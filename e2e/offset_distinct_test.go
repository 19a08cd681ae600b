package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// Item 4 of issue 22, the completeness side: an offset walk whose page
// silently omits a record reads the next record twice, and the walk's
// count still reaches pagination.total. Counted by distinct keys it falls
// short: the run is not proven complete, so it must not exit 0 (the
// omitted record is missing from a fresh table). The run fails as
// transient and the next run walks the list again from its first page, so
// once the API serves every record a run completes with none missing
// (docs/pagination.md, "Counts compare distinct keys").
func TestOffsetWalkShortOfTotalInDistinctKeysFails(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 30)
			job := writeJob(t, dir, tg.name+".yaml", withPagination(delJob(api.URL, tg, "keep", "", "state: "+tg.name+".db\n"), offsetTotal))
			api.mu.Lock()
			api.omit = 15 // offsets 0, 10, 19, 29 are read: 20 twice, 15 never
			api.mu.Unlock()
			for i := 0; i < 2; i++ { // the re-walk meets the same hole
				r := delRun(t, dir, 3, "run", job)
				if !strings.Contains(r.stdout, "distinct") {
					t.Fatalf("run %d: the error does not say the distinct records fall short: %s", i+1, r.stdout)
				}
			}
			// status says the job failed, not that it was interrupted.
			if st := statusOf(t, dir, job); st.Status != "failed" {
				t.Fatalf("status after a walk short of total: %q, want failed", st.Status)
			}
			if live := liveIDs(tg.rows(t)); live[15] || len(live) != 29 {
				t.Fatalf("rows: %d, 15 live: %v (want the 29 records served)", len(live), live[15])
			}
			api.mu.Lock()
			api.omit = 0
			api.mu.Unlock()
			r := delRun(t, dir, 0, "run", job)
			var res struct {
				Status  string `json:"status"`
				Resumed bool   `json:"resumed"`
				Records int64  `json:"records"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatal(err)
			}
			if res.Status != "completed" || res.Resumed || res.Records != 30 {
				t.Fatalf("the run after the API healed must walk the list again from offset 0: %s", r.stdout)
			}
			sameIDs(t, "after a clean walk", liveIDs(tg.rows(t)), api.live())
		})
	}
}

// The same hole across two invocations of one pass: the page that omits a
// record is the last one a partial run commits, and the page that repeats
// one is the first the continuing run reads. A full pass that sweeps
// stores its keys, and those are counted too: the run fails rather than
// completing over the hole (and deleting nothing, as its sweep is void).
func TestOffsetWalkShortOfTotalAcrossInvocations(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 30)
			job := writeJob(t, dir, tg.name+".yaml", withPagination(delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"), offsetTotal))
			api.mu.Lock()
			api.omit = 15
			api.mu.Unlock()
			delRun(t, dir, 0, "run", job, "--max-pages", "2") // offsets 0 and 10: 15 left out
			api.mu.Lock()
			api.omit = 0
			api.mu.Unlock()
			if r := delRun(t, dir, 3, "run", job); !strings.Contains(r.stdout, "distinct") { // offsets 19 (20 again), 29
				t.Fatalf("the continuing run does not say the distinct records fall short: %s", r.stdout)
			}
			delRun(t, dir, 0, "run", job)
			sameIDs(t, "after the pass walked again", liveIDs(tg.rows(t)), api.live())
		})
	}
}
