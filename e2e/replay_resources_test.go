package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A `run` of a file with several resources that continues a killed replay
// of one of them has still to sync that resource: the replay covered its
// range only, so the job's exit 0 with "completed" (every resource
// completed a run of kind run in the cycle) needs a run of kind run too.
// Orders added past the replay's range after the kill are in the tables
// when the run says completed.
func TestResourcesRunAfterKilledReplaySyncsTheResource(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 30, MaxChildren: 3, Seed: 23})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url}.yaml())
	runJob(t, dir, 0, "run", job)

	k := idemsync(t, dir, []string{"IDEMSYNC_TEST_FAILPOINT=checkpoint-committed:1"}, "replay", job, "--resource", "orders", "--from", "1", "--to", "2")
	if k.code != -1 && k.code != 137 {
		t.Fatalf("replay with failpoint: exit %d, want killed: %s", k.code, k.stderr)
	}
	outliveKilledLease()
	if st := statusEntries(t, dir, job)["orders"]; st.Status != "interrupted" {
		t.Fatalf("orders after the killed replay: %+v", st)
	}
	s.AddParents(4, 2) // orders 31-34, on pages 5 and 6, past the replay's range

	j := runJob(t, dir, 0, "run", job)
	if j.Status != "completed" {
		t.Fatalf("run after the killed replay: %+v", j)
	}
	assertShop(t, tgt, dir, s, false)
}

// A target table emptied while a replay was unfinished: the replay goes
// on where it stopped and restores its range only, so the job has still
// lost every row outside it. The run after the replay must start from the
// beginning, as a run that finds the table empty does, not from the saved
// mark (hwm) or the feed's last position (continue: true): two runs later
// the table equals the source (docs/operations.md, "Replay").
func TestReplayOverEmptiedTableLeavesNoHole(t *testing.T) {
	for _, style := range []string{"hwm", "continue"} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: 120})
			dir := t.TempDir()
			db := filepath.Join(dir, "out.db")
			job := writeJob(t, dir, "job.yaml", styleJob(style, url, "sqlite:out.db"))
			runCode(t, dir, nil, 0, "run", job)
			hwm := statusOf(t, dir, job).HWM
			from := map[string]string{"hwm": fakeMark(50), "continue": fakeCursor(50)}[style]
			k := idemsync(t, dir, []string{"IDEMSYNC_TEST_FAILPOINT=checkpoint-committed:1"}, "replay", job, "--from", from)
			if k.code != -1 && k.code != 137 {
				t.Fatalf("replay with failpoint: exit %d, want killed: %s", k.code, k.stderr)
			}
			outliveKilledLease()
			if _, err := openSQLite(t, db).Exec(`DELETE FROM orders`); err != nil {
				t.Fatal(err)
			}
			if r := runCode(t, dir, nil, 0, "run", job); r.Kind != "replay" || r.Status != "completed" {
				t.Fatalf("run after the kill did not continue the replay: %+v", r)
			}
			if st := statusOf(t, dir, job); st.HWM != hwm {
				t.Errorf("the replay moved the saved mark from %q to %q", hwm, st.HWM)
			}
			if r := runCode(t, dir, nil, 0, "run", job); r.Kind != "run" || r.Status != "completed" {
				t.Fatalf("run after the replay: %+v", r)
			}
			assertEqualSource(t, readSQLite(t, db), sourceRows(api))
		})
	}
}

// A child's replay range is in parent keys; one whose --to comes before
// its --from is a usage error naming both, before any request, as it is
// for pages, offsets and marks: it would walk no parent and report a
// completed replay of nothing.
func TestReplayChildRangeBackwards(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 12, MaxChildren: 3, Seed: 24})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url}.yaml())
	runJob(t, dir, 0, "run", job)
	s.ResetCounters()
	r := idemsync(t, dir, nil, "replay", job, "--resource", "order_items", "--from", "10", "--to", "3")
	if r.code != 2 || !strings.Contains(r.stderr+r.stdout, "--to 3 comes before --from 10") {
		t.Errorf("replay of the children of parents 10 to 3: exit %d, want 2 naming the range: %s %s", r.code, r.stdout, r.stderr)
	}
	if n := s.TotalRequests(); n != 0 {
		t.Errorf("%d requests for an invalid replay", n)
	}
	// Equal ends are one parent.
	if j := runJob(t, dir, 0, "replay", job, "--resource", "order_items", "--from", "4", "--to", "4"); j.Status != "completed" {
		t.Errorf("replay of parent 4's children: %+v", j)
	}
}

// A page number before the job's first page (pagination.start, 1 by
// default) names no page of the walk: it is a usage error before any
// request, not a replay recorded and failed at the API's 400, which every
// later run would continue and fail again.
func TestReplayPageBeforeStart(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 60})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	first := runCode(t, dir, nil, 0, "run", job)
	api.ResetCounters()
	for _, args := range [][]string{{"--from", "0"}, {"--from", "0", "--to", "2"}} {
		r := idemsync(t, dir, nil, append([]string{"replay", job}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "--from 0 comes before the first page, 1 (pagination.start)") {
			t.Errorf("replay %v: exit %d, want 2 naming pagination.start: %s", args, r.code, r.stderr)
		}
	}
	if n := api.TotalRequests(); n != 0 {
		t.Errorf("%d requests for an invalid replay", n)
	}
	if r := runCode(t, dir, nil, 0, "run", job); r.Kind != "run" || r.RunID == first.RunID || r.Status != "completed" {
		t.Errorf("run after the refused replays: %+v", r)
	}
}
