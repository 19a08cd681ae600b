package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The sweep removes or marks a row only when its pass proves the record is
// gone; when the pass cannot prove it, the sweep does nothing and says why
// (docs/deletions.md, "What proves absence").

// sweepOf reads the sweep fields of a --json run object (or of
// status --json's last_run).
type sweepOf struct {
	Deleted      int64  `json:"deleted"`
	Sweep        string `json:"sweep"`
	SweepSkipped string `json:"sweep_skipped"`
	ExitCode     int    `json:"exit_code"`
}

func parseSweep(t *testing.T, stdout string) sweepOf {
	t.Helper()
	var s sweepOf
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("not a run object: %v: %s", err, stdout)
	}
	return s
}

// wantSkipped fails unless the run object r says its sweep was skipped for
// a reason containing why, and deleted nothing.
func wantSkipped(t *testing.T, r result, why string) sweepOf {
	t.Helper()
	s := parseSweep(t, r.stdout)
	if s.Sweep != "skipped" || !strings.Contains(s.SweepSkipped, why) || s.Deleted != 0 {
		t.Fatalf("want sweep skipped (%q) and nothing deleted, got %+v\nstdout: %s\nstderr: %s", why, s, r.stdout, r.stderr)
	}
	return s
}

// withPagination replaces delJob's page-style pagination block.
func withPagination(job, block string) string {
	return strings.Replace(job, "pagination:\n  style: page\n  size_param: per_page\n  size: 10\n", block, 1)
}

// Item 2 of issue 22: a record updated during a full pass of a job with
// incremental.end_param moves past the run's upper bound; a bounded walk
// does not list it, and the sweep must not delete it.
func TestSweepSparesRecordUpdatedDuringBoundedFullPass(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 30)
			inc := "incremental:\n  field: updated_at\n  param: updated_since\n  end_param: updated_before\n"
			body := withPagination(delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"+inc),
				"pagination:\n  style: cursor\n  param: after\n  next: next\n  size_param: per_page\n  size: 10\n")
			job := writeJob(t, dir, tg.name+".yaml", body)
			delRun(t, dir, 0, "run", job)
			if n := len(tg.rows(t)); n != 30 {
				t.Fatalf("%d rows after the first run, want 30", n)
			}
			// Record 25, on the third page, changes while the first page is
			// being written: its new mark lies after the run's upper bound.
			api.mu.Lock()
			api.served = func(a *delAPI, start int) {
				if start == 0 {
					r := a.recs[25]
					r.V, r.UpdatedAt = "changed", time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
					a.recs[25] = r
					a.served = nil
				}
			}
			api.since = nil
			api.mu.Unlock()
			r := delRun(t, dir, 0, "run", job, "--full")
			if d := deletedOf(t, r); d != 0 {
				t.Fatalf("the full pass deleted %d rows of records that still exist: %s", d, r.stdout)
			}
			api.mu.Lock()
			if n := len(api.since); n != 3 { // what it costs: no request more than a bounded walk's 3
				t.Errorf("the unbounded full pass made %d requests, want 3", n)
			}
			api.mu.Unlock()
			sameIDs(t, "after a full pass with a record changed during it", liveIDs(tg.rows(t)), api.live())
			// A record really deleted is still swept, by the second full pass
			// that misses it.
			api.remove(4)
			delPending(t, dir, 1, "run", job, "--full")
			if r := delRun(t, dir, 0, "run", job, "--full"); deletedOf(t, r) != 1 {
				t.Fatalf("a full pass after a deletion: %s", r.stdout)
			}
			sameIDs(t, "after a deletion", liveIDs(tg.rows(t)), api.live())
		})
	}
}

// offsetTotal is the pagination of an offset walk with a total.
const offsetTotal = "pagination:\n  style: offset\n  size: 10\n  total: total\n"

// offsetNoTotal is an offset walk without a count: a shift in it voids the
// sweep, and the walk, having no count to fall short of, completes (with
// pagination.total it fails instead: TestOffsetWalkShortOfTotalInDistinctKeysFails).
const offsetNoTotal = "pagination:\n  style: offset\n  size: 10\n"

// Item 4 of issue 22: a page that silently omits a record shifts the next
// offset, and the next page repeats a record. A pass that read a key twice
// cannot prove anything absent: the sweep is skipped and says so, in the
// run object, in status and in the metrics. (The walk has no total here:
// with one, its distinct records fall short of it and the run fails,
// TestOffsetWalkShortOfTotalInDistinctKeysFails.)
func TestSweepSkippedAfterOffsetShift(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 35) // the last page is short: the end is proven
			job := writeJob(t, dir, tg.name+".yaml", withPagination(delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"), offsetNoTotal))
			delRun(t, dir, 0, "run", job)
			api.mu.Lock()
			api.omit = 15
			api.mu.Unlock()
			metrics := filepath.Join(dir, tg.name+".prom")
			r := delRun(t, dir, 0, "run", job, "--metrics-file", metrics)
			wantSkipped(t, r, "twice")
			sameIDs(t, "after a shifted walk", liveIDs(tg.rows(t)), api.live())
			if st := statusOf(t, dir, job); st.LastRun == nil {
				t.Fatal("no last run")
			}
			st := idemsync(t, dir, nil, "status", job, "--json")
			var sj struct {
				Jobs []struct {
					LastRun sweepOf `json:"last_run"`
				} `json:"jobs"`
			}
			if err := json.Unmarshal([]byte(st.stdout), &sj); err != nil || len(sj.Jobs) != 1 ||
				sj.Jobs[0].LastRun.Sweep != "skipped" || !strings.Contains(sj.Jobs[0].LastRun.SweepSkipped, "twice") {
				t.Fatalf("status --json does not show the skipped sweep: %v %s", err, st.stdout)
			}
			if txt := idemsync(t, dir, nil, "status", job).stdout; !strings.Contains(txt, "sweep") || !strings.Contains(txt, "skipped (") {
				t.Fatalf("status does not show the skipped sweep:\n%s", txt)
			}
			m, err := os.ReadFile(metrics)
			if err != nil || !strings.Contains(string(m), `idemsync_sweeps_skipped_total{job="del",resource="del"} 1`) {
				t.Fatalf("metrics do not count the skipped sweep: %v\n%s", err, m)
			}
			// The text result says it too.
			if out := idemsync(t, dir, nil, "run", job).stdout; !strings.Contains(out, "sweep: skipped (") {
				t.Fatalf("text result does not say the sweep was skipped: %s", out)
			}
			// Once the API serves every record again, a pass proves, and
			// sweeps what is really gone: the first such pass leaves it
			// pending (the last pass that proved saw it), the next removes.
			api.mu.Lock()
			api.omit = 0
			api.mu.Unlock()
			api.remove(3)
			delPending(t, dir, 1, "run", job)
			r = delRun(t, dir, 0, "run", job)
			if s := parseSweep(t, r.stdout); s.Deleted != 1 || s.Sweep == "skipped" {
				t.Fatalf("a clean pass: %s", r.stdout)
			}
			sameIDs(t, "after a clean pass", liveIDs(tg.rows(t)), api.live())
		})
	}
}

// A record removed during an offset walk with a total, before the walk's
// position, pushes the next record back across a page already read: no
// page lists it. The total going down says so: the sweep is skipped.
func TestSweepSkippedWhenTotalShrinks(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 30)
			job := writeJob(t, dir, tg.name+".yaml", withPagination(delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"), offsetTotal))
			delRun(t, dir, 0, "run", job)
			api.mu.Lock()
			api.served = func(a *delAPI, start int) {
				if start == 10 { // record 5 goes while offset 10 is being read: 21 moves to offset 19
					delete(a.recs, 5)
					a.served = nil
				}
			}
			api.mu.Unlock()
			wantSkipped(t, delRun(t, dir, 0, "run", job), "went down from 30 to 29")
			if rows := liveIDs(tg.rows(t)); !rows[21] || len(rows) != 30 {
				t.Fatalf("live rows after a walk that shifted: %d, 21 live: %v", len(rows), rows[21])
			}
			delPending(t, dir, 1, "run", job)
			if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 1 {
				t.Fatalf("the next pass: %s", r.stdout)
			}
			sameIDs(t, "after the next pass", liveIDs(tg.rows(t)), api.live())
		})
	}
}

// The proof is the pass's, not the invocation's: a pass that saw a shift
// and then failed (exit 3) says its sweep is skipped, and the run that
// finishes it later skips it too, with the reason stored in the state file.
func TestSweepSkippedHoldsAcrossExits(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 40)
			job := writeJob(t, dir, tg.name+".yaml", withPagination(delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"), offsetNoTotal))
			delRun(t, dir, 0, "run", job)
			api.mu.Lock()
			api.omit, api.fail = 15, 4 // offsets 0, 10, 19, 29 are read; 39 answers 500
			api.mu.Unlock()
			wantSkipped(t, delRun(t, dir, 3, "run", job), "twice")
			api.mu.Lock()
			api.omit, api.fail = 0, 0
			api.mu.Unlock()
			api.remove(35) // not deleted by this pass: its proof is void
			r := delRun(t, dir, 0, "run", job)
			wantSkipped(t, r, "twice")
			if n := len(tg.rows(t)); n != 40 {
				t.Fatalf("%d rows, want 40: the pass that shifted deleted", n)
			}
			delPending(t, dir, 1, "run", job)
			if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 1 {
				t.Fatalf("the next clean pass: %s", r.stdout)
			}
			sameIDs(t, "after a clean pass", liveIDs(tg.rows(t)), api.live())
		})
	}
}

// Item 9 of issue 22 (second half): a walk without a count that ends on an
// empty page after a full one cannot tell the end from a page lost for a
// moment: its sweep is skipped. With pagination.total the same walk is
// checked against the count, and proves.
func TestSweepSkippedOnEmptyPageWithoutCount(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 40)
			job := writeJob(t, dir, tg.name+".yaml", delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"))
			delRun(t, dir, 0, "run", job)
			api.mu.Lock()
			api.empty = 4 // ids 31..40 are lost for a moment
			api.mu.Unlock()
			wantSkipped(t, delRun(t, dir, 0, "run", job), "empty")
			sameIDs(t, "after a walk that ended on a lost page", liveIDs(tg.rows(t)), api.live())

			// With a count the lost page contradicts it: the run fails as
			// transient and deletes nothing; once the page is back, a walk
			// ending on an empty page after a full one proves, and sweeps.
			counted := writeJob(t, dir, tg.name+"-total.yaml", strings.Replace(
				delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"), "  size: 10\n", "  size: 10\n  total: total\n", 1))
			delRun(t, dir, 3, "run", counted)
			if n := len(tg.rows(t)); n != 40 {
				t.Fatalf("%d rows, want 40", n)
			}
			api.mu.Lock()
			api.empty = 0
			api.mu.Unlock()
			api.remove(7)
			api.set(41, "v41", false) // still 40 records: the walk ends on an empty page 5
			// A fresh pass: continuing the failed one across the removal of
			// a record before its position would be a shifted walk.
			delPending(t, dir, 1, "run", counted, "--restart")
			if r := delRun(t, dir, 0, "run", counted); deletedOf(t, r) != 1 {
				t.Fatalf("a counted walk: %s", r.stdout)
			}
			sameIDs(t, "after a counted walk", liveIDs(tg.rows(t)), api.live())
			api.remove(8)
			api.set(42, "v42", false)
			wantSkipped(t, delRun(t, dir, 0, "run", job), "empty")
		})
	}
}
