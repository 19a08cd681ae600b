package sinktest

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// keysOf returns a SweepRequest key source over keys.
func keysOf(keys []string) func(fn func(string) error) error {
	return func(fn func(string) error) error {
		for _, k := range keys {
			if err := fn(k); err != nil {
				return err
			}
		}
		return nil
	}
}

// priorSawNone sets req's prior pass to one that started now and saw no
// key: every live row this sweep misses that was written before now goes
// (docs/deletions.md, "Two passes"). It waits a little first: a row
// written in the same millisecond as the prior pass's start is taken as
// written since (SQLite compares times to the millisecond).
func priorSawNone(req *contract.SweepRequest) {
	time.Sleep(3 * time.Millisecond)
	req.Prior, req.PriorStart, req.PriorLiveBefore = keysOf(nil), time.Now(), -1
}

// twoPasses checks the two-pass rule of Sweeper.Sweep (docs/deletions.md,
// "Two passes"): without a prior pass nothing goes and every missed row is
// pending; with one, only the rows it missed too and that were not written
// since it started go, the rest stay pending; the ratio's base is the
// fewer of the two passes' live rows.
func twoPasses(t *testing.T, b *DB) {
	for _, mode := range []string{contract.DeletesHard, contract.DeletesSoft} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			s := b.Sink(t)
			tbl := b.Table("twopass_"+mode, []string{"id"},
				Col("id", contract.TypeText), Col("name", contract.TypeText), Col("age", contract.TypeInteger))
			tbl.Deletes = mode
			sw := s
			MustPrepare(t, s, tbl)
			rows := []contract.Row{Row("a", "Ann", int64(1)), Row("b", "Bob", int64(2)), Row("c", "Cy", int64(3)), Row("d", "Di", int64(4))}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 4}, rows...)
			keys, err := sw.KeyForms(ctx, tbl, rows)
			if err != nil {
				t.Fatal(err)
			}
			// The first proving pass saw only a: b, c and d are pending.
			req := contract.SweepRequest{Mode: mode, MaxRatio: 1, At: time.Now(), LiveBefore: 4, Keys: keysOf(keys[:1])}
			if res, err := sw.Sweep(ctx, tbl, req); err != nil || res.Deleted != 0 || res.Pending != 3 {
				t.Fatalf("sweep without a prior pass: %+v, %v; want 0 removed, 3 pending", res, err)
			}
			// The prior pass (started now) saw b; c is written again after
			// it started; this pass sees a again: only d goes.
			// Rows count as written before a time by the millisecond (julianday
			// on SQLite): the first rows' millisecond must be over.
			time.Sleep(2 * time.Millisecond)
			priorStart := time.Now()
			time.Sleep(5 * time.Millisecond)
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, Row("c", "Cyd", int64(3)))
			req.Prior, req.PriorStart, req.PriorLiveBefore = keysOf(keys[1:2]), priorStart, 4
			res, err := sw.Sweep(ctx, tbl, req)
			if err != nil || res.Deleted != 1 || res.Pending != 2 {
				t.Fatalf("sweep with a prior pass: %+v, %v; want 1 removed (d), 2 pending (b, c)", res, err)
			}
			got := map[string]bool{}
			live, err := sw.LiveRows(ctx, tbl)
			if err != nil || live != 3 {
				t.Fatalf("live rows after the sweep: %d, %v; want 3", live, err)
			}
			if mode == contract.DeletesSoft {
				q := fmt.Sprintf("SELECT %s FROM %s WHERE %s IS NOT NULL", sqlkit.QuoteIdent("id"), QName(tbl), sqlkit.QuoteIdent(contract.ColDeletedAt))
				for _, r := range b.Rows(t, q) {
					got[fmt.Sprint(r[0])] = true
				}
				if len(got) != 1 || !got["d"] {
					t.Fatalf("marked rows %v, want only d", sortedKeys(got))
				}
			}
			// The base is the fewer of the two passes' live rows: removing
			// b and c (2) of a prior pass's 3 is over a ratio of 0.5.
			priorSawNone(&req)
			req.Keys, req.PriorLiveBefore = keysOf(keys[:1]), 3
			req.MaxRatio, req.LiveBefore = 0.5, 10
			if _, err := sw.Sweep(ctx, tbl, req); err == nil {
				t.Fatal("a sweep of 2 rows over a prior pass's 3 live rows passed max_delete_ratio 0.5")
			}
			if live, err := sw.LiveRows(ctx, tbl); err != nil || live != 3 {
				t.Fatalf("live rows after a refused sweep: %d, %v; want 3", live, err)
			}
			// A prior pass that missed every row (a glitch) and kept 3
			// pending, and this pass missed b only: b was missed by both,
			// but 2 of the prior pass's 3 misses were listed since, more
			// than the 1 both missed: nothing goes, b stays pending.
			priorSawNone(&req)
			req.Keys, req.PriorLiveBefore, req.MaxRatio, req.LiveBefore = keysOf([]string{keys[0], keys[2]}), 3, 1, 3
			req.PriorPending = 3
			res, err = sw.Sweep(ctx, tbl, req)
			if err != nil || res.Deleted != 0 || res.Pending != 1 || res.Untrue != 1 || res.PriorListed != 2 {
				t.Fatalf("sweep after a prior pass whose misses were listed since: %+v, %v; want 0 removed, 1 pending, untrue 1, listed 2", res, err)
			}
			// A prior pass that saw a and c and recorded 10 pending rows,
			// 9 of which the table no longer holds (a target put back, rows
			// deleted by hand): those were not listed again, b goes.
			req.Prior, req.PriorPending = keysOf([]string{keys[0], keys[2]}), 10
			if res, err = sw.Sweep(ctx, tbl, req); err != nil || res.Deleted != 1 || res.Untrue != 0 {
				t.Fatalf("sweep after a prior pass whose pending rows the table no longer holds but b: %+v, %v; want 1 removed", res, err)
			}
		})
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
