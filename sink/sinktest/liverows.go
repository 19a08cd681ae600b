package sinktest

import (
	"context"
	"testing"
	"time"

	idsync "github.com/idemsync/idemsync/sync"
)

// liveRows checks Sweeper.LiveRows, max_delete_ratio's base
// (docs/deletions.md): 0 for a missing table, then the rows a soft sweep
// has not marked.
func liveRows(t *testing.T, b *DB) {
	ctx := context.Background()
	s, tbl := b.Sink(t), People(b)
	tbl.Deletes = idsync.DeletesSoft
	sw, ok := s.(idsync.Sweeper)
	if !ok {
		t.Fatalf("%s sink is no idsync.Sweeper", b.Name)
	}
	if n, err := sw.LiveRows(ctx, tbl); err != nil || n != 0 {
		t.Fatalf("live rows of a missing table: %d, %v; want 0", n, err)
	}
	MustPrepare(t, s, tbl)
	rows := []idsync.Row{Row("a", "Ann", int64(1)), Row("b", "Bob", int64(2)), Row("c", "Cy", int64(3))}
	MustUpsert(t, s, tbl, idsync.Counts{Inserted: 3}, rows...)
	keys, err := sw.KeyForms(ctx, tbl, rows[:1])
	if err != nil {
		t.Fatal(err)
	}
	req := idsync.SweepRequest{Mode: idsync.DeletesSoft, MaxRatio: 1, At: time.Now(), LiveBefore: 3,
		Keys: func(fn func(string) error) error { return fn(keys[0]) }}
	priorSawNone(&req)
	if res, err := sw.Sweep(ctx, tbl, req); err != nil || res.Deleted != 2 || res.Base != 3 {
		t.Fatalf("sweep: %+v, %v; want 2 marked of a base of 3", res, err)
	}
	if n, err := sw.LiveRows(ctx, tbl); err != nil || n != 1 {
		t.Fatalf("live rows after marking 2 of 3: %d, %v; want 1", n, err)
	}
}
