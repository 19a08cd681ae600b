package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

func passCases() []testCase {
	return []testCase{
		{"complete pass", completePass},
		{"refuse pass", refusePass},
		{"skip sweep keeps the first reason", skipSweep},
	}
}

// CompletePass adds the sweep's deletions, completes the run and, for a
// full pass, makes its start the job's last full pass and clears a due
// one; a run not running is refused.
func completePass(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	refused := startRun(t, s, contract.RunInfo{Job: "orders", Full: true})
	if err := s.RefusePass(ctx, refused, "too many"); err != nil {
		t.Fatal(err)
	}
	id := startRun(t, s, contract.RunInfo{Job: "orders", Full: true, StartedAt: t0})
	commit(t, s, "orders", fullPage(id, "p1", "end"))
	if err := s.CompletePass(ctx, id, 7); err != nil {
		t.Fatal(err)
	}
	r, js := run(t, s, "orders", id), jobState(t, s, "orders")
	if r.Status != contract.RunCompleted || r.Deleted != 8 || r.FinishedAt.IsZero() {
		t.Errorf("completed pass: %+v", r)
	}
	if !js.FullPassAt.Equal(t0) || js.FullDue {
		t.Errorf("job after a completed pass: last pass %v (want %v), due %v", js.FullPassAt, t0, js.FullDue)
	}
	if m, err := s.Metrics(ctx, "orders", "orders"); err != nil || m.Deleted != 8 {
		t.Errorf("metrics deleted = %+v, %v; want 8", m, err)
	}
	wantCode(t, "complete a completed pass", s.CompletePass(ctx, id, 1), contract.Permanent)
	// A run that is not a full pass completes without becoming the last pass.
	inc := startRun(t, s, contract.RunInfo{Job: "orders", StartedAt: t0.Add(time.Hour)})
	if err := s.CompletePass(ctx, inc, 0); err != nil {
		t.Fatal(err)
	}
	if js := jobState(t, s, "orders"); !js.FullPassAt.Equal(t0) {
		t.Errorf("a run that is no full pass moved the last pass to %v", js.FullPassAt)
	}
}

// RefusePass ends the pass for good (never continued) with its error and
// makes the next run a full pass.
func refusePass(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	id := startRun(t, s, contract.RunInfo{Job: "orders", Full: true})
	if err := s.RefusePass(ctx, id, "would delete 90%"); err != nil {
		t.Fatal(err)
	}
	r, js := run(t, s, "orders", id), jobState(t, s, "orders")
	if r.Status != contract.RunRefused || r.Error != "would delete 90%" || r.Unfinished() || !js.FullDue {
		t.Errorf("refused pass %+v, job due %v", r, js.FullDue)
	}
	if u, err := s.Unfinished(ctx, "orders"); err != nil || u != nil {
		t.Errorf("Unfinished after a refusal = %+v, %v", u, err)
	}
	wantCode(t, "refuse twice", s.RefusePass(ctx, id, "again"), contract.Permanent)
}

// SkipSweep stores the first reason only; a continued run keeps it.
func skipSweep(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	id := startRun(t, s, contract.RunInfo{Job: "orders", Full: true})
	for _, reason := range []string{"first", "second"} {
		if err := s.SkipSweep(ctx, id, reason); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishRun(ctx, id, contract.RunInterrupted, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(ctx, id); err != nil {
		t.Fatal(err)
	}
	if r := run(t, s, "orders", id); r.SweepSkipped != "first" {
		t.Errorf("SweepSkipped = %q, want the first reason", r.SweepSkipped)
	}
}
