package pgstate

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/postgres"
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

// So does a page committed in its target transaction (joined: the state in
// the target's database), once the engine says it committed (CommittedIn);
// a page rolled back moves nothing.
func TestJoinedPageCommitsRenewTrust(t *testing.T) {
	state := newSchema(t, url.Values{"lease": {"1s"}})
	ctx := context.Background()
	s := openTest(t, state)
	defer s.Close()
	sink, err := postgres.OpenTarget(ctx, contract.Conn{URL: testURL(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	tbl := &contract.Table{Schema: s.name, Name: "orders", Key: []string{"id"}, Create: true,
		Columns: []contract.Column{{Name: "id", Type: contract.TypeInteger}}}
	if err := sink.Prepare(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	unlock, err := s.Lock(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	id, err := s.StartRun(ctx, &contract.RunInfo{Job: "orders", Kind: contract.KindRun, StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	s.paused.Store(true)
	l := s.leases["orders"]
	trusted := l.trustedUntil()
	boom := errors.New("rolled back")
	if _, err := sink.UpsertIn(ctx, tbl, []contract.Row{{Values: []any{int64(0)}, Hash: "h"}}, func(ctx context.Context, tx contract.PageTx, _ contract.Counts) error {
		if err := s.CommitPageIn(ctx, tx, "orders", &contract.PageCommit{RunID: id, Position: "p", Next: "q", Records: 1}); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if l.trustedUntil() != trusted {
		t.Error("a page rolled back moved the trusted time on")
	}
	start := time.Now()
	for i := int64(1); time.Since(start) < 2500*time.Millisecond; i++ {
		since := time.Now()
		_, err := sink.UpsertIn(ctx, tbl, []contract.Row{{Values: []any{i}, Hash: "h"}}, func(ctx context.Context, tx contract.PageTx, _ contract.Counts) error {
			return s.CommitPageIn(ctx, tx, "orders", &contract.PageCommit{RunID: id, Position: fmt.Sprint("p", i), Next: fmt.Sprint("p", i+1), Records: 1})
		})
		if err != nil {
			t.Fatalf("page %d, %s after the heartbeat stopped: %v", i, time.Since(start).Round(time.Millisecond), err)
		}
		s.CommittedIn("orders", since)
		time.Sleep(150 * time.Millisecond)
	}
}
