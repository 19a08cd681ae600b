package sinktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// sweepCases check contract.Sweeper, the end of a full pass with deletes:
// hard or soft (docs/deletions.md), and the tombstones of a page.
func sweepCases() []testCase {
	return []testCase{
		{"sweep hard, again after a crash", func(t *testing.T, b *DB) {
			// The engine's probe: key forms of no rows read nothing, so a
			// missing table stays missing.
			if keys, err := b.Sink(t).KeyForms(context.Background(), People(b), nil); err != nil || len(keys) != 0 {
				t.Fatalf("KeyForms of no rows on a missing table: %v, %v", keys, err)
			}
			s, tbl := sweepTable(t, b, contract.DeletesHard, "a", "b", "c", "d")
			// A key may come more than once.
			res := mustSweep(t, s, tbl, sweepReq(t, s, tbl, contract.DeletesHard, "a", "c", "a"))
			if res.Deleted != 2 || res.Live != 4 || res.Base != 4 {
				t.Errorf("sweep: %+v, want 2 deleted of 4 live, base 4", res)
			}
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "a", int64(1)), Row("c", "c", int64(1))))
			if res := mustSweep(t, s, tbl, sweepReq(t, s, tbl, contract.DeletesHard, "a", "c")); res.Deleted != 0 || res.Pending != 0 {
				t.Errorf("second sweep: %+v, want nothing deleted of 2 live", res)
			}
		}},
		{"sweep soft marks and keeps its marks", func(t *testing.T, b *DB) {
			s, tbl := sweepTable(t, b, contract.DeletesSoft, "a", "b", "c", "d")
			if res := mustSweep(t, s, tbl, sweepReq(t, s, tbl, contract.DeletesSoft, "a", "c")); res.Deleted != 2 || res.Live != 4 {
				t.Errorf("sweep: %+v, want 2 marked of 4 live", res)
			}
			first := marks(t, b, tbl)
			if len(first) != 2 || first["b"] == "" || first["d"] == "" {
				t.Fatalf("marked: %v, want b and d", first)
			}
			if n, err := s.LiveRows(context.Background(), tbl); err != nil || n != 2 {
				t.Errorf("live rows: %d, %v; want 2", n, err)
			}
			// Again later: the marks stay as they were.
			req := sweepReq(t, s, tbl, contract.DeletesSoft, "a", "c")
			req.At = req.At.Add(time.Hour)
			if res := mustSweep(t, s, tbl, req); res.Deleted != 0 || res.Pending != 0 {
				t.Errorf("second sweep: %+v, want nothing newly marked, nothing pending", res)
			}
			if again := marks(t, b, tbl); fmt.Sprint(again) != fmt.Sprint(first) {
				t.Errorf("marks after a second sweep: %v, were %v", again, first)
			}
			// A key that reappears clears its mark.
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, Row("b", "b", int64(1)))
			if m := marks(t, b, tbl); len(m) != 1 || m["d"] == "" {
				t.Errorf("marked after b came back: %v, want d only", m)
			}
		}},
		{"sweep over max_delete_ratio is refused and changes nothing", func(t *testing.T, b *DB) {
			s, tbl := sweepTable(t, b, contract.DeletesHard, "a", "b", "c", "d")
			req := sweepReq(t, s, tbl, contract.DeletesHard, "a")
			req.MaxRatio = 0.5
			_, err := s.Sweep(context.Background(), tbl, req)
			if !errors.Is(err, contract.ErrSweepRefused) || contract.ClassOf(err) != contract.Permanent || !strings.Contains(err.Error(), "3 of the 4") {
				t.Fatalf("sweep of 3 of 4 rows at ratio 0.5: %v (exit %d); want a permanent refusal naming 3 of the 4", err, contract.ClassOf(err))
			}
			if got := len(b.Read(t, tbl)); got != 4 {
				t.Fatalf("%d rows after a refused sweep, want the 4 kept", got)
			}
			req.Allow = true
			if res := mustSweep(t, s, tbl, req); res.Deleted != 3 {
				t.Errorf("allowed sweep: %+v, want 3 deleted", res)
			}
		}},
		{"sweep after a refusal counts only rows written before it", func(t *testing.T, b *DB) {
			// a and b are the table before a glitch; c..f came with it.
			s, tbl := sweepTable(t, b, contract.DeletesHard, "a", "b")
			time.Sleep(20 * time.Millisecond)
			cut := time.Now()
			time.Sleep(20 * time.Millisecond)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 4}, Row("c", "c", int64(1)), Row("d", "d", int64(1)), Row("e", "e", int64(1)), Row("f", "f", int64(1)))
			req := sweepReq(t, s, tbl, contract.DeletesHard, "a")
			req.MaxRatio, req.LiveBefore = 0.5, 2
			// Measured as a whole: 5 of a base of 2.
			if _, err := s.Sweep(context.Background(), tbl, req); !errors.Is(err, contract.ErrSweepRefused) {
				t.Fatalf("sweep of 5 rows against a base of 2: %v, want refused", err)
			}
			// Only b was written before the glitch: 1 of 2 passes 0.5.
			req.WrittenBefore = cut
			if res := mustSweep(t, s, tbl, req); res.Deleted != 5 || res.Base != 2 {
				t.Errorf("sweep with WrittenBefore: %+v, want 5 deleted, base 2", res)
			}
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "a", int64(1))))
		}},
		{"sweep whose keys fail changes nothing", func(t *testing.T, b *DB) {
			s, tbl := sweepTable(t, b, contract.DeletesHard, "a", "b")
			boom := errors.New("keys unreadable")
			req := sweepReq(t, s, tbl, contract.DeletesHard, "a")
			keys := req.Keys
			req.Keys = func(fn func(string) error) error {
				if err := keys(fn); err != nil {
					return err
				}
				return boom
			}
			if _, err := s.Sweep(context.Background(), tbl, req); !errors.Is(err, boom) {
				t.Fatalf("sweep: %v, want the keys' error wrapped", err)
			}
			if got := len(b.Read(t, tbl)); got != 2 {
				t.Errorf("%d rows after a failed sweep, want 2", got)
			}
		}},
		{"tombstones delete", func(t *testing.T, b *DB) {
			s, tbl := sweepTable(t, b, contract.DeletesHard, "a", "b", "c")
			gone, missing := Row("b", "b", int64(1)), Row("z", "z", int64(1))
			gone.Tombstone, missing.Tombstone = true, true
			MustUpsert(t, s, tbl, contract.Counts{Deleted: 1, Unchanged: 1, Inserted: 1}, gone, missing, Row("d", "d", int64(1)))
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "a", int64(1)), Row("c", "c", int64(1)), Row("d", "d", int64(1))))
			// A key tombstoned then written in one page: the last wins.
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 1, Unchanged: 1}, gone, Row("b", "b2", int64(2)))
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "a", int64(1)), Row("b", "b2", int64(2)), Row("c", "c", int64(1)), Row("d", "d", int64(1))))
		}},
		{"tombstones on a soft table mark", func(t *testing.T, b *DB) {
			s, tbl := sweepTable(t, b, contract.DeletesSoft, "a", "b", "c")
			gone := Row("b", "b", int64(1))
			gone.Tombstone = true
			MustUpsert(t, s, tbl, contract.Counts{Deleted: 1}, gone)
			first := marks(t, b, tbl)
			if len(first) != 1 || first["b"] == "" {
				t.Fatalf("marked: %v, want b", first)
			}
			// Buried again: already marked, unchanged, the mark kept.
			MustUpsert(t, s, tbl, contract.Counts{Unchanged: 1}, gone)
			if again := marks(t, b, tbl); fmt.Sprint(again) != fmt.Sprint(first) {
				t.Errorf("marks after a second tombstone: %v, were %v", again, first)
			}
			if got := len(b.Read(t, tbl)); got != 3 {
				t.Errorf("%d rows, want 3: a soft table keeps marked rows", got)
			}
			if n, err := s.LiveRows(context.Background(), tbl); err != nil || n != 2 {
				t.Errorf("live rows: %d, %v; want 2", n, err)
			}
		}},
	}
}

// sweepTable prepares People with deletes mode and the rows of ids (name
// the id, age 1).
func sweepTable(t *testing.T, b *DB, mode string, ids ...string) (contract.Sink, *contract.Table) {
	t.Helper()
	s, tbl := b.Sink(t), People(b)
	tbl.Deletes = mode
	MustPrepare(t, s, tbl)
	var rows []contract.Row
	for _, id := range ids {
		rows = append(rows, Row(id, id, int64(1)))
	}
	MustUpsert(t, s, tbl, contract.Counts{Inserted: int64(len(rows))}, rows...)
	return s, tbl
}

// sweepReq is a sweep that keeps the rows of ids, at any ratio, its base
// unknown.
func sweepReq(t *testing.T, s contract.Sink, tbl *contract.Table, mode string, ids ...string) contract.SweepRequest {
	t.Helper()
	var rows []contract.Row
	for _, id := range ids {
		rows = append(rows, Row(id, id, int64(1)))
	}
	keys, err := s.KeyForms(context.Background(), tbl, rows)
	if err != nil || len(keys) != len(rows) {
		t.Fatalf("key forms of %v: %v, %v", ids, keys, err)
	}
	req := contract.SweepRequest{Mode: mode, MaxRatio: 1, LiveBefore: -1, At: time.Now().UTC(),
		Keys: func(fn func(string) error) error {
			for _, k := range keys {
				if err := fn(k); err != nil {
					return err
				}
			}
			return nil
		}}
	// The previous proving pass saw none of the rows written so far: the
	// rows this pass misses go now (docs/deletions.md, "Two passes").
	priorSawNone(&req)
	return req
}

func mustSweep(t *testing.T, s contract.Sink, tbl *contract.Table, req contract.SweepRequest) contract.SweepResult {
	t.Helper()
	res, err := s.Sweep(context.Background(), tbl, req)
	if err != nil {
		t.Fatalf("sweep %s: %v", tbl, err)
	}
	return res
}

// marks returns the deletion mark of every marked row of a People table,
// by id, as text.
func marks(t *testing.T, b *DB, tbl *contract.Table) map[string]string {
	t.Helper()
	m := map[string]string{}
	q := fmt.Sprintf("SELECT %s, %s FROM %s WHERE %[2]s IS NOT NULL", sqlkit.QuoteIdent("id"), sqlkit.QuoteIdent(contract.ColDeletedAt), QName(tbl))
	for _, r := range b.Rows(t, q) {
		m[canon(t, contract.TypeText, r[0])] = canon(t, contract.TypeTimestamp, r[1])
	}
	return m
}
