package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

func lockCases() []testCase {
	return []testCase{
		{"lock excludes a second holder", lockExcludes},
		{"close releases the lock", closeReleases},
		{"taken over run fences its first owner", takenOver},
	}
}

// While one Store holds a job's lock, another Store on the same state
// (another process), or the holder itself, fails with exit 4 naming the job, and the job's
// state names the holder; other jobs stay free; after unlock (called
// twice: harmless) the other takes it.
func lockExcludes(t *testing.T, e *env) {
	ctx := context.Background()
	a, b := e.store(t), e.store(t)
	unlock, err := a.Lock(ctx, "orders")
	if err != nil {
		t.Fatalf("first Lock: %v", err)
	}
	_, err = b.Lock(ctx, "orders")
	wantCode(t, "second holder", err, contract.Locked)
	_, err = a.Lock(ctx, "orders")
	wantCode(t, "the holder locking again", err, contract.Locked)
	if err != nil && !strings.Contains(err.Error(), "orders") {
		t.Errorf("lock error %q does not name the job", err)
	}
	if js := jobState(t, b, "orders"); js.Holder == "" {
		t.Error("JobState.Holder is empty while the lock is held")
	}
	unlockOther, err := b.Lock(ctx, "other")
	if err != nil {
		t.Fatalf("lock of another job: %v", err)
	}
	unlockOther()
	unlock()
	unlock()
	if js := jobState(t, b, "orders"); js.Holder != "" {
		t.Errorf("JobState.Holder = %q after unlock", js.Holder)
	}
	unlockB, err := b.Lock(ctx, "orders")
	if err != nil {
		t.Fatalf("Lock after the holder unlocked: %v", err)
	}
	defer unlockB()
	_, err = a.Lock(ctx, "orders")
	wantCode(t, "the first store, now second", err, contract.Locked)
}

// Closing a Store releases the locks it still holds; their unlock is then
// harmless.
func closeReleases(t *testing.T, e *env) {
	ctx := context.Background()
	a, closeA := e.closable(t)
	b := e.store(t)
	unlockA, err := a.Lock(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	closeA()
	unlockA() // after Close: harmless
	unlock, err := b.Lock(ctx, "orders")
	if err != nil {
		t.Fatalf("Lock after the holder closed: %v", err)
	}
	unlock()
}

// A run reopened by another Store (the next process, after the first lost
// its lock) belongs to it: the first Store's page commits, finishes and
// pass ends fail with exit 4 and change nothing.
func takenOver(t *testing.T, e *env) {
	ctx := context.Background()
	a, b := e.store(t), e.store(t)
	id := startRun(t, a, contract.RunInfo{Job: "orders", Full: true})
	commit(t, a, "orders", fullPage(id, "p1", "p2"))
	if err := b.Reopen(ctx, id); err != nil {
		t.Fatalf("Reopen by the second store: %v", err)
	}
	before := takeSnapshot(t, b, "orders")
	p := fullPage(id, "p2", "p3")
	wantCode(t, "commit by the first owner", a.CommitPage(ctx, "orders", &p), contract.Locked)
	wantCode(t, "finish by the first owner", a.FinishRun(ctx, id, contract.RunFailed, "x", ""), contract.Locked)
	wantCode(t, "complete pass by the first owner", a.CompletePass(ctx, id, 3), contract.Locked)
	wantCode(t, "refuse pass by the first owner", a.RefusePass(ctx, id, "x"), contract.Locked)
	sameSnapshot(t, "the first owner's writes", before, takeSnapshot(t, b, "orders"))
	commit(t, b, "orders", p)
	finish(t, b, id, contract.RunCompleted, "")
	wantCode(t, "finish by the first owner after completion", a.FinishRun(ctx, id, contract.RunFailed, "late", ""), contract.Locked)
	if r := run(t, b, "orders", id); r.Status != contract.RunCompleted || r.Pages != 2 || r.Error != "" {
		t.Errorf("completed run changed by the first owner: %+v", r)
	}
	id2 := startRun(t, b, contract.RunInfo{Job: "orders"})
	// Abandoning needs no ownership: the caller holds the job's lock.
	if err := a.FinishRun(ctx, id2, contract.RunAbandoned, "", ""); err != nil {
		t.Errorf("abandon a run another store owns: %v", err)
	}
}
