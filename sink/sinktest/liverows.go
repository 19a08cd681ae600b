package sinktest

import (
	"context"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// liveRows checks Sweeper.LiveRows, max_delete_ratio's base
// (docs/deletions.md): 0 for a missing table, then the rows a soft sweep
// has not marked.
func liveRows(t *testing.T, b *DB) {
	ctx := context.Background()
	s, tbl := b.Sink(t), People(b)
	tbl.Deletes = contract.DeletesSoft
	if n, err := s.LiveRows(ctx, tbl); err != nil || n != 0 {
		t.Fatalf("live rows of a missing table: %d, %v; want 0", n, err)
	}
	MustPrepare(t, s, tbl)
	rows := []contract.Row{Row("a", "Ann", int64(1)), Row("b", "Bob", int64(2)), Row("c", "Cy", int64(3))}
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 3}, rows...)
	keys, err := s.KeyForms(ctx, tbl, rows[:1])
	if err != nil {
		t.Fatal(err)
	}
	req := contract.SweepRequest{Mode: contract.DeletesSoft, MaxRatio: 1, At: time.Now(), LiveBefore: 3,
		Keys: func(fn func(string) error) error { return fn(keys[0]) }}
	priorSawNone(&req)
	if res, err := s.Sweep(ctx, tbl, req); err != nil || res.Deleted != 2 || res.Base != 3 {
		t.Fatalf("sweep: %+v, %v; want 2 marked of a base of 3", res, err)
	}
	if n, err := s.LiveRows(ctx, tbl); err != nil || n != 1 {
		t.Fatalf("live rows after marking 2 of 3: %d, %v; want 1", n, err)
	}
}
