package storetest

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// t0 is a time every store keeps exactly (whole seconds, UTC).
var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func startRun(t *testing.T, s contract.Store, r contract.RunInfo) int64 {
	t.Helper()
	id, err := s.StartRun(context.Background(), &r)
	if err != nil {
		t.Fatalf("StartRun(%+v): %v", r, err)
	}
	return id
}

func commit(t *testing.T, s contract.Store, job string, p contract.PageCommit) {
	t.Helper()
	if err := s.CommitPage(context.Background(), job, &p); err != nil {
		t.Fatalf("CommitPage(%s, %+v): %v", job, p, err)
	}
}

func finish(t *testing.T, s contract.Store, runID int64, status, hwm string) {
	t.Helper()
	if err := s.FinishRun(context.Background(), runID, status, "", hwm); err != nil {
		t.Fatalf("FinishRun(%d, %s): %v", runID, status, err)
	}
}

func jobState(t *testing.T, s contract.Store, job string) *contract.JobState {
	t.Helper()
	js, err := s.Job(context.Background(), job)
	if err != nil {
		t.Fatalf("Job(%s): %v", job, err)
	}
	return js
}

// run returns the run runID of job.
func run(t *testing.T, s contract.Store, job string, runID int64) contract.RunInfo {
	t.Helper()
	runs, err := s.Runs(context.Background(), job, 0)
	if err != nil {
		t.Fatalf("Runs(%s): %v", job, err)
	}
	for _, r := range runs {
		if r.ID == runID {
			return r
		}
	}
	t.Fatalf("run %d of job %s not found in %+v", runID, job, runs)
	return contract.RunInfo{}
}

func pages(t *testing.T, s contract.Store, runID int64) []contract.PageInfo {
	t.Helper()
	ps, err := s.Pages(context.Background(), runID)
	if err != nil {
		t.Fatalf("Pages(%d): %v", runID, err)
	}
	return ps
}

// seen returns the keys recorded with runID's pages and whether the set is
// complete.
func seen(t *testing.T, s contract.Store, runID int64) ([]string, bool) {
	t.Helper()
	var keys []string
	complete, err := s.SeenKeys(context.Background(), runID, func(k string) error {
		keys = append(keys, k)
		return nil
	})
	if err != nil {
		t.Fatalf("SeenKeys(%d): %v", runID, err)
	}
	return keys, complete
}

// snapshot is everything of a job that a write could change, read
// through the interface.
type snapshot struct {
	Job     *contract.JobState
	Runs    []contract.RunInfo
	Pages   map[int64][]contract.PageInfo
	Keys    map[int64][]string
	Dead    []contract.DeadLetter
	Schema  []contract.SchemaChange
	Metrics contract.MetricsTotals
}

func takeSnapshot(t *testing.T, s contract.Store, job string) snapshot {
	t.Helper()
	ctx := context.Background()
	sn := snapshot{Job: jobState(t, s, job), Pages: map[int64][]contract.PageInfo{}, Keys: map[int64][]string{}}
	sn.Job.Holder = "" // who holds the lock is not state
	var err error
	if sn.Runs, err = s.Runs(ctx, job, 0); err != nil {
		t.Fatalf("Runs: %v", err)
	}
	for _, r := range sn.Runs {
		sn.Pages[r.ID] = pages(t, s, r.ID)
		sn.Keys[r.ID], _ = seen(t, s, r.ID)
	}
	if sn.Dead, err = s.DeadLetters(ctx, job, 0); err != nil {
		t.Fatalf("DeadLetters: %v", err)
	}
	if sn.Schema, err = s.SchemaChanges(ctx, job, 0); err != nil {
		t.Fatalf("SchemaChanges: %v", err)
	}
	if sn.Metrics, err = s.Metrics(ctx, job, job); err != nil {
		t.Fatalf("Metrics: %v", err)
	}
	return sn
}

func sameSnapshot(t *testing.T, what string, before, after snapshot) {
	t.Helper()
	if !reflect.DeepEqual(before, after) {
		t.Errorf("%s changed the state:\nbefore %+v\nafter  %+v", what, before, after)
	}
}

// wantCode checks that err carries the class of failure code.
func wantCode(t *testing.T, what string, err error, code contract.Class) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want class %s", what, code)
	}
	if got := contract.ClassOf(err); got != code {
		t.Errorf("%s: class %s, want %s (%v)", what, got, code, err)
	}
}

// fullPage is a page that touches everything a page can touch.
func fullPage(runID int64, pos, next string) contract.PageCommit {
	return contract.PageCommit{RunID: runID, Position: pos, Next: next, Records: 5, Hash: "h-" + pos,
		Inserted: 2, Updated: 1, Unchanged: 1, Deleted: 1, Skipped: 1, MaxMark: "m-" + pos, HWM: "hwm-" + pos,
		Columns: `[{"name":"id-` + pos + `"}]`, Keys: []string{"k1-" + pos, "k2-" + pos},
		Dead: []contract.DeadLetter{{Position: pos, Index: 3, Reason: "bad " + pos, Raw: `{"x":1}`}}}
}

func sorted(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
