package pgstate

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// A page's commit renews the lease in its transaction (fence), so the
// holder trusts its lease from that renewal as from a heartbeat's
// (docs/operations.md, "Leases"): a run whose heartbeat is starved (a
// loaded host) but whose pages commit goes on. Failed first: with the
// heartbeat paused, the commit after the first trusted time (800ms) was
// refused with exit 4 though every page had renewed the lease; the
// multi-host model's final run lost its own lease so at load 30.
func TestPageCommitsRenewTrust(t *testing.T) {
	state := newSchema(t, url.Values{"lease": {"1s"}})
	ctx := context.Background()
	a, b := openTest(t, state), openTest(t, state)
	defer a.Close()
	defer b.Close()
	unlock, err := a.Lock(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	id, err := a.StartRun(ctx, &contract.RunInfo{Job: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	a.paused.Store(true)
	for i, end := 0, time.Now().Add(2500*time.Millisecond); time.Now().Before(end); i++ {
		p := &contract.PageCommit{RunID: id, Position: fmt.Sprint("p", i), Next: fmt.Sprint("p", i+1), Records: 1}
		if err := a.CommitPage(ctx, "orders", p); err != nil {
			t.Fatalf("page %d, %s after the heartbeat stopped: %v", i+1, time.Since(end.Add(-2500*time.Millisecond)).Round(time.Millisecond), err)
		}
		time.Sleep(150 * time.Millisecond)
	}
	// The database agrees: the lease still runs, nobody else takes it.
	if _, err := b.Lock(ctx, "orders"); contract.ClassOf(err) != contract.Locked {
		t.Errorf("another Store's lock while the pages renewed the lease: %v, want exit 4", err)
	}
}
