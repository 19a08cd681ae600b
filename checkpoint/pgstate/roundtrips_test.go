package pgstate

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A page's checkpoint costs the state few round trips to the database
// (docs/performance.md, "State in PostgreSQL"): the page's statements
// with the lease renewal as one batch, in a transaction of its own (the
// batch's implicit one) or in the target's. Each round
// trip is a wait on the network per page, which the lease must not turn
// into more than 5% over a state file.
func TestCommitPageRoundTrips(t *testing.T) {
	state := newSchema(t, nil) // the default lease: no heartbeat during the test
	ctx := context.Background()
	s := openTest(t, state)
	defer s.Close()
	rt := &roundTrips{}
	cfg := s.pool.Config()
	cfg.ConnConfig.Tracer = rt
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.pool.Close()
	s.pool = pool

	unlock, err := s.Lock(ctx, "shop.orders")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	runID, err := s.StartRun(ctx, &contract.RunInfo{Job: "shop.orders", Full: true})
	if err != nil {
		t.Fatal(err)
	}
	page := &contract.PageCommit{RunID: runID, Position: "p1", Next: "p2", Records: 2, Inserted: 2,
		Hash: "h", HWM: "2026-01-01", Columns: `["id"]`, Keys: []string{"1", "2"},
		Dead: []contract.DeadLetter{{Index: 1, Reason: "bad", Raw: "{}"}}}
	rt.n.Store(0)
	if err := s.CommitPage(ctx, "shop.orders", page); err != nil {
		t.Fatal(err)
	}
	if n := rt.n.Load(); n != 1 {
		t.Errorf("CommitPage took %d round trips, want 1 (one batch, its own implicit transaction)", n)
	}

	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	page2 := &contract.PageCommit{RunID: runID, Position: "p2", Next: "p3", Records: 1, Hash: "h2", FinishedAt: time.Now()}
	rt.n.Store(0)
	if err := s.CommitPageIn(ctx, txOnly{tx}, "shop.orders", page2); err != nil {
		t.Fatal(err)
	}
	if n := rt.n.Load(); n != 1 {
		t.Errorf("CommitPageIn took %d round trips in the target's transaction, want 1 (one batch)", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := pages(t, s, runID); n != 2 {
		t.Errorf("%d pages committed, want 2", n)
	}
	if d, err := s.DeadLetters(ctx, "shop.orders", 0); err != nil || len(d) != 1 {
		t.Errorf("dead letters: %v, %v; want the page's one", d, err)
	}
	if u, err := s.Unfinished(ctx, "shop.orders"); u != nil || err != nil {
		t.Errorf("the last page did not complete the run: %+v, %v", u, err)
	}
}

// roundTrips counts the statements and batches a connection sends: one
// round trip each (pgx waits for each one's answer).
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// txOnly is a target's page transaction as contract.PageTx, without a
// fences table.
type txOnly struct{ tx pgx.Tx }

func (x txOnly) Tx() any                                  { return x.tx }
func (txOnly) Fence(context.Context, string, int64) error { return nil }
