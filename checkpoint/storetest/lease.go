package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// leaseCases are the cases of a store whose run lock is a lease that
// expires unless renewed (docs/operations.md, "Leases"): they run when the
// harness sets Lease and Pause.
func leaseCases() []testCase {
	return []testCase{
		{"a live holder keeps its lease past its length", leaseRenewed},
		{"a paused holder's lease expires and another takes over", leaseTakeover},
		{"a paused holder commits nothing after a takeover", leaseFenced},
	}
}

// leaseStores returns two Stores on the case's state, or skips the case
// when the store's lock is no lease.
func leaseStores(t *testing.T, e *env) (a, b contract.Store) {
	t.Helper()
	if e.h.Lease == 0 || e.h.Pause == nil {
		t.Skip("the store's run lock is not a lease (the harness sets no Lease and Pause)")
	}
	return e.store(t), e.store(t)
}

// expire waits until a lease taken now has surely expired.
func expire(e *env) { time.Sleep(e.h.Lease * 3 / 2) }

// A holder that keeps running renews its lease: after twice its length
// another Store still cannot take the job, and the holder's commits go on.
func leaseRenewed(t *testing.T, e *env) {
	a, b := leaseStores(t, e)
	ctx := context.Background()
	unlock, err := a.Lock(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	id := startRun(t, a, contract.RunInfo{Job: "orders"})
	time.Sleep(2 * e.h.Lease)
	_, err = b.Lock(ctx, "orders")
	wantCode(t, "lock while the holder renews", err, contract.Locked)
	commit(t, a, "orders", fullPage(id, "p1", "p2"))
	if js := jobState(t, b, "orders"); js.Holder == "" {
		t.Error("JobState.Holder is empty while a renewed lease runs")
	}
}

// A holder that stops renewing (a process stopped by SIGSTOP, or cut off
// from the database) loses its lease once it expired: another Store takes
// the job, and the first one's late unlock does not release the new
// holder's lease.
func leaseTakeover(t *testing.T, e *env) {
	a, b := leaseStores(t, e)
	c := e.store(t)
	ctx := context.Background()
	unlockA, err := a.Lock(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	e.h.Pause(a)
	_, err = b.Lock(ctx, "orders")
	wantCode(t, "lock before the paused holder's lease expired", err, contract.Locked)
	expire(e)
	unlockB, err := b.Lock(ctx, "orders")
	if err != nil {
		t.Fatalf("Lock after the paused holder's lease expired: %v", err)
	}
	defer unlockB()
	unlockA()
	_, err = c.Lock(ctx, "orders")
	wantCode(t, "lock after the old holder's late unlock", err, contract.Locked)
}

// The fencing: after another Store took the job over and reopened the run,
// the paused first holder's page commit, finish and pass ends are refused
// with exit 4 and change nothing, and the new holder continues the run.
func leaseFenced(t *testing.T, e *env) {
	a, b := leaseStores(t, e)
	ctx := context.Background()
	unlockA, err := a.Lock(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	defer unlockA()
	id := startRun(t, a, contract.RunInfo{Job: "orders", Full: true})
	commit(t, a, "orders", fullPage(id, "p1", "p2"))
	e.h.Pause(a)
	expire(e)
	unlockB, err := b.Lock(ctx, "orders")
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	defer unlockB()
	before := takeSnapshot(t, b, "orders")
	p := fullPage(id, "p2", "p3")
	wantCode(t, "commit by the paused holder", a.CommitPage(ctx, "orders", &p), contract.Locked)
	wantCode(t, "finish by the paused holder", a.FinishRun(ctx, id, contract.RunFailed, "x", ""), contract.Locked)
	wantCode(t, "complete pass by the paused holder", a.CompletePass(ctx, id, 1), contract.Locked)
	_, err = a.StartRun(ctx, &contract.RunInfo{Job: "orders"})
	wantCode(t, "start run by the paused holder", err, contract.Locked)
	sameSnapshot(t, "the paused holder's writes", before, takeSnapshot(t, b, "orders"))
	if err := b.Reopen(ctx, id); err != nil {
		t.Fatalf("Reopen by the new holder: %v", err)
	}
	commit(t, b, "orders", p)
	finish(t, b, id, contract.RunCompleted, "")
	if r := run(t, b, "orders", id); r.Status != contract.RunCompleted || r.Pages != 2 {
		t.Errorf("run continued by the new holder: %+v", r)
	}
}
