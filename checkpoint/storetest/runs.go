package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

func runCases() []testCase {
	return []testCase{
		{"new job", newJob},
		{"start run keeps its fields", startRunFields},
		{"runs are numbered per job", runNumbers},
		{"unfinished run", unfinishedRun},
		{"finish run", finishRun},
		{"finish run refusals", finishRefusals},
		{"reopen", reopen},
		{"last run and last sync", lastRunAndSync},
		{"jobs", jobsList},
		{"mark and identity", markAndIdentity},
	}
}

// A job never seen has only its name, and no runs.
func newJob(t *testing.T, e *env) {
	s := e.store(t)
	js := jobState(t, s, "orders")
	if (*js != contract.JobState{Name: "orders"}) {
		t.Errorf("Job of a new job = %+v, want only its name", js)
	}
	ctx := context.Background()
	if runs, err := s.Runs(ctx, "orders", 0); err != nil || len(runs) != 0 {
		t.Errorf("Runs = %+v, %v; want none", runs, err)
	}
	if r, err := s.Unfinished(ctx, "orders"); err != nil || r != nil {
		t.Errorf("Unfinished = %+v, %v; want nil", r, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check of a new state: %v", err)
	}
}

// StartRun keeps every field the engine gives it and starts the counters
// at zero.
func startRunFields(t *testing.T, e *env) {
	s := e.store(t)
	in := contract.RunInfo{Job: "orders", Kind: contract.KindReplay, StartedAt: t0, Checkpoint: "c1", Last: "l0",
		Window: "w", MaxMark: "m", From: "f", To: "to", Identity: "id1", Full: true, LiveBefore: 42,
		RefusedSince: t0.Add(-time.Hour), Pages: 9, Inserted: 9, Status: contract.RunCompleted}
	id := startRun(t, s, in)
	got := run(t, s, "orders", id)
	want := in
	want.ID, want.Number, want.Status, want.Pages, want.Inserted = id, 1, contract.RunRunning, 0, 0
	if !got.StartedAt.Equal(want.StartedAt) || !got.RefusedSince.Equal(want.RefusedSince) {
		t.Errorf("times: started %v refused since %v, want %v and %v", got.StartedAt, got.RefusedSince, want.StartedAt, want.RefusedSince)
	}
	got.StartedAt, got.RefusedSince, want.StartedAt, want.RefusedSince = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run read back:\n got %+v\nwant %+v", got, want)
	}
	// Defaults: kind run, started now, LiveBefore kept as given.
	before := time.Now().Add(-time.Minute)
	id2 := startRun(t, s, contract.RunInfo{Job: "orders", LiveBefore: -1})
	r2 := run(t, s, "orders", id2)
	if r2.Kind != contract.KindRun || r2.StartedAt.Before(before) || r2.StartedAt.After(time.Now().Add(time.Minute)) || r2.LiveBefore != -1 {
		t.Errorf("defaults: kind %q started %v live before %d", r2.Kind, r2.StartedAt, r2.LiveBefore)
	}
	if _, err := s.StartRun(context.Background(), &contract.RunInfo{Job: "orders", Kind: "bogus"}); err == nil {
		t.Error("StartRun accepted an unknown kind")
	}
}

// IDs are unique in the store; Number counts each job's runs from 1.
func runNumbers(t *testing.T, e *env) {
	s := e.store(t)
	ids := map[int64]bool{}
	for i, job := range []string{"a", "b", "a", "a", "b"} {
		id := startRun(t, s, contract.RunInfo{Job: job})
		if ids[id] {
			t.Fatalf("run %d: ID %d given twice", i, id)
		}
		ids[id] = true
		finish(t, s, id, contract.RunCompleted, "")
	}
	for job, want := range map[string][]int64{"a": {3, 2, 1}, "b": {2, 1}} {
		runs, err := s.Runs(context.Background(), job, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, r := range runs {
			got = append(got, r.Number)
		}
		if len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
			t.Errorf("job %s: numbers newest first %v, want %v", job, got, want)
		}
	}
	runs, err := s.Runs(context.Background(), "a", 2)
	if err != nil || len(runs) != 2 || runs[0].Number != 3 {
		t.Errorf("Runs(a, 2) = %+v, %v; want the latest two", runs, err)
	}
}

// Unfinished returns the latest run while it is running, interrupted,
// failed or partial, and nil once it is completed or abandoned.
func unfinishedRun(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	for _, status := range []string{contract.RunInterrupted, contract.RunFailed, contract.RunPartial, contract.RunCompleted, contract.RunAbandoned} {
		id := startRun(t, s, contract.RunInfo{Job: "orders", Checkpoint: "c-" + status})
		if r, err := s.Unfinished(ctx, "orders"); err != nil || r == nil || r.ID != id || r.Checkpoint != "c-"+status {
			t.Fatalf("Unfinished of a running run = %+v, %v", r, err)
		}
		if err := s.FinishRun(ctx, id, status, "because", ""); err != nil {
			t.Fatal(err)
		}
		r, err := s.Unfinished(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		want := status != contract.RunCompleted && status != contract.RunAbandoned
		if (r != nil) != want || r != nil && (r.ID != id || r.Status != status || r.Error != "because") {
			t.Errorf("after %s: Unfinished = %+v, want unfinished %v", status, r, want)
		}
		if r != nil {
			if err := s.FinishRun(ctx, id, contract.RunAbandoned, "", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// FinishRun sets status, error and finish time; completed with a mark
// saves the job's mark, other statuses never do.
func finishRun(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	if err := s.FinishRun(ctx, id, contract.RunFailed, "boom", "9"); err != nil {
		t.Fatal(err)
	}
	r := run(t, s, "orders", id)
	if r.Status != contract.RunFailed || r.Error != "boom" || r.FinishedAt.IsZero() {
		t.Errorf("failed run: %+v", r)
	}
	if js := jobState(t, s, "orders"); js.HWM != "" {
		t.Errorf("a failed run saved the mark %q", js.HWM)
	}
	if err := s.Reopen(ctx, id); err != nil {
		t.Fatal(err)
	}
	finish(t, s, id, contract.RunCompleted, "7")
	if js := jobState(t, s, "orders"); js.HWM != "7" {
		t.Errorf("completed with mark 7: HWM %q", js.HWM)
	}
	// Confirming a completed run completed is allowed; without a mark it
	// keeps the saved one.
	finish(t, s, id, contract.RunCompleted, "")
	if js := jobState(t, s, "orders"); js.HWM != "7" {
		t.Errorf("confirming completed cleared the mark: %q", js.HWM)
	}
}

// A finished run cannot change status, an unknown run or status is
// refused: exit 1, nothing changed.
func finishRefusals(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	done := startRun(t, s, contract.RunInfo{Job: "orders"})
	finish(t, s, done, contract.RunCompleted, "5")
	live := startRun(t, s, contract.RunInfo{Job: "orders"})
	before := takeSnapshot(t, s, "orders")
	for _, tc := range []struct {
		what   string
		id     int64
		status string
	}{
		{"completed run failed", done, contract.RunFailed},
		{"completed run abandoned", done, contract.RunAbandoned},
		{"unknown run", live + 100, contract.RunFailed},
		{"unknown status", live, "bogus"},
		{"running is not final", live, contract.RunRunning},
	} {
		wantCode(t, tc.what, s.FinishRun(ctx, tc.id, tc.status, "x", "9"), contract.Permanent)
	}
	wantCode(t, "reopen a completed run", s.Reopen(ctx, done), contract.Permanent)
	wantCode(t, "reopen an unknown run", s.Reopen(ctx, live+100), contract.Permanent)
	sameSnapshot(t, "refused finishes", before, takeSnapshot(t, s, "orders"))
}

// Reopen sets an unfinished run running again and clears its error and
// finish time; the run keeps its checkpoint.
func reopen(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	id := startRun(t, s, contract.RunInfo{Job: "orders", Checkpoint: "c1"})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "c1", Next: "c2", Records: 1})
	if err := s.FinishRun(ctx, id, contract.RunInterrupted, "signal", ""); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "commit to an interrupted run", s.CommitPage(ctx, "orders", &contract.PageCommit{RunID: id, Position: "c2", Next: "c3"}), contract.Permanent)
	if err := s.Reopen(ctx, id); err != nil {
		t.Fatal(err)
	}
	r := run(t, s, "orders", id)
	if r.Status != contract.RunRunning || r.Error != "" || !r.FinishedAt.IsZero() || r.Checkpoint != "c2" || r.Pages != 1 {
		t.Errorf("reopened run: %+v", r)
	}
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "c2", Next: "c3"})
}

// LastRun is the newest run, LastSync the newest of kind run.
func lastRunAndSync(t *testing.T, e *env) {
	s := e.store(t)
	sync1 := startRun(t, s, contract.RunInfo{Job: "orders"})
	finish(t, s, sync1, contract.RunCompleted, "")
	replay := startRun(t, s, contract.RunInfo{Job: "orders", Kind: contract.KindReplay})
	js := jobState(t, s, "orders")
	if js.LastRun == nil || js.LastRun.ID != replay || js.LastSync == nil || js.LastSync.ID != sync1 {
		t.Errorf("LastRun %+v LastSync %+v, want %d and %d", js.LastRun, js.LastSync, replay, sync1)
	}
	other := startRun(t, s, contract.RunInfo{Job: "other"})
	if js := jobState(t, s, "other"); js.LastRun == nil || js.LastRun.ID != other || js.LastSync == nil || js.LastSync.ID != other {
		t.Errorf("other job: %+v", js)
	}
}

// Jobs and JobNames list every job, by name.
func jobsList(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	for _, j := range []string{"b", "shop.orders", "a"} {
		startRun(t, s, contract.RunInfo{Job: j})
	}
	want := []string{"a", "b", "shop.orders"}
	names, err := s.JobNames(ctx)
	if err != nil || len(names) != 3 || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Errorf("JobNames = %v, %v; want %v", names, err, want)
	}
	jobs, err := s.Jobs(ctx)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("Jobs = %+v, %v", jobs, err)
	}
	for i, js := range jobs {
		if js.Name != want[i] || js.LastRun == nil || js.LastRun.Job != want[i] {
			t.Errorf("Jobs[%d] = %+v, want job %s with its run", i, js, want[i])
		}
	}
}

// ClearMark forgets the saved mark; a run of kind run with an identity
// makes it the job's; AdoptIdentity fills an identity only where none is
// stored.
func markAndIdentity(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	old := startRun(t, s, contract.RunInfo{Job: "orders"})
	finish(t, s, old, contract.RunCompleted, "5")
	if err := s.ClearMark(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if js := jobState(t, s, "orders"); js.HWM != "" || js.Identity != "" {
		t.Errorf("after ClearMark: HWM %q identity %q", js.HWM, js.Identity)
	}
	if err := s.ClearMark(ctx, "never"); err != nil {
		t.Errorf("ClearMark of a job never seen: %v", err)
	}
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	if err := s.AdoptIdentity(ctx, "orders", id, "id-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.AdoptIdentity(ctx, "orders", id, "id-b"); err != nil {
		t.Fatal(err)
	}
	if r, js := run(t, s, "orders", id), jobState(t, s, "orders"); r.Identity != "id-a" || js.Identity != "id-a" {
		t.Errorf("adopted identity: run %q job %q, want id-a for both", r.Identity, js.Identity)
	}
	replay := startRun(t, s, contract.RunInfo{Job: "orders", Kind: contract.KindReplay, Identity: "id-r"})
	if js := jobState(t, s, "orders"); js.Identity != "id-a" {
		t.Errorf("a replay's identity became the job's: %q", js.Identity)
	}
	finish(t, s, replay, contract.RunCompleted, "")
	startRun(t, s, contract.RunInfo{Job: "orders", Identity: "id-c"})
	if js := jobState(t, s, "orders"); js.Identity != "id-c" {
		t.Errorf("a run's identity did not become the job's: %q", js.Identity)
	}
}
