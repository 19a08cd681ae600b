package sinktest

import (
	"context"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// parentCases check contract.ParentReader, which a child resource's fan-out
// reads its parent's table with (docs/job-file.md, "Parent → child fan-out").
func parentCases() []testCase {
	ctx := context.Background()
	orders := func(b *DB) *contract.Table {
		return b.Table("orders", []string{"id"}, Col("id", contract.TypeInteger), Col("code", contract.TypeText),
			Col("paid", contract.TypeBoolean), Col("at", contract.TypeTimestamp), Col("total", contract.TypeNumeric))
	}
	at := time.Date(2024, 5, 1, 12, 30, 0, 500_000_000, time.UTC)
	rowsOf := func(ids ...int64) []contract.Row {
		var out []contract.Row
		for _, id := range ids {
			out = append(out, Row(id, fmt.Sprintf("c/%d", id), id%2 == 0, at, "12.50"))
		}
		return out
	}
	reader := func(t *testing.T, b *DB) contract.ParentReader {
		t.Helper()
		return b.Sink(t)
	}
	ids := func(t *testing.T, rows [][]*string) string {
		t.Helper()
		var out []string
		for _, r := range rows {
			out = append(out, *r[0])
		}
		return strings.Join(out, ",")
	}
	return []testCase{
		{"parent rows by key, as text", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), orders(b)
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 4}, rowsOf(10, 2, 1, 3)...)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, Row(int64(4), nil, nil, nil, nil))
			cols := []string{"id", "code", "paid", "at", "total"}
			got, err := reader(t, b).ParentRows(ctx, tbl, cols, contract.ParentFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if s := ids(t, got); s != "1,2,3,4,10" {
				t.Fatalf("ids %s, want 1,2,3,4,10 (key order, numeric)", s)
			}
			// every value reads back as its column's type
			for i, want := range rowsOf(2) {
				for j, c := range tbl.Columns {
					if !sameText(*got[1][j], c.Type, want.Values[j]) {
						t.Errorf("row %d column %s: %q does not read back as %v", i, c.Name, *got[1][j], want.Values[j])
					}
				}
			}
			if got[3][1] != nil || got[3][4] != nil {
				t.Errorf("NULLs read back as %v %v", got[3][1], got[3][4])
			}
		}},
		{"parent rows since, in a key range", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), orders(b)
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 5}, rowsOf(1, 2, 3, 4, 5)...)
			time.Sleep(20 * time.Millisecond)
			since := time.Now()
			time.Sleep(20 * time.Millisecond)
			changed := []contract.Row{Row(int64(2), "new", true, at, "12.50"), Row(int64(4), "new", true, at, "12.50")}
			MustUpsert(t, s, tbl, contract.Counts{Updated: 2, Unchanged: 1}, append(changed, rowsOf(5)...)...)
			r := reader(t, b)
			for _, tt := range []struct {
				f    contract.ParentFilter
				want string
			}{
				{contract.ParentFilter{Since: since}, "2,4"},
				{contract.ParentFilter{From: []any{int64(2)}, To: []any{int64(4)}}, "2,3,4"},
				{contract.ParentFilter{From: []any{int64(3)}}, "3,4,5"},
				{contract.ParentFilter{Since: since, To: []any{int64(3)}}, "2"},
				{contract.ParentFilter{Since: time.Now().Add(time.Hour)}, ""},
				// a walk in key order: after the last key read, a batch at a time
				{contract.ParentFilter{After: []any{int64(2)}, Limit: 2}, "3,4"},
				{contract.ParentFilter{After: []any{int64(4)}, Limit: 2}, "5"},
				{contract.ParentFilter{Since: since, After: []any{int64(2)}, Limit: 1}, "4"},
			} {
				got, err := r.ParentRows(ctx, tbl, []string{"id"}, tt.f)
				if err != nil || ids(t, got) != tt.want {
					t.Errorf("filter %+v: %s, %v; want %s", tt.f, ids(t, got), err, tt.want)
				}
			}
		}},
		{"parent rows with a composite key", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("lines", []string{"order_id", "n"}, Col("order_id", contract.TypeInteger), Col("n", contract.TypeInteger))
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 5}, Row(int64(2), int64(1)), Row(int64(1), int64(2)), Row(int64(1), int64(1)),
				Row(int64(10), int64(1)), Row(int64(2), int64(2)))
			for _, tt := range []struct {
				f    contract.ParentFilter
				want string
			}{
				{contract.ParentFilter{From: []any{int64(1), int64(2)}, To: []any{int64(2), int64(1)}}, "1/2 2/1"},
				{contract.ParentFilter{After: []any{int64(1), int64(2)}, Limit: 2}, "2/1 2/2"}, // keys compared as a row
			} {
				got, err := reader(t, b).ParentRows(ctx, tbl, []string{"order_id", "n"}, tt.f)
				var pairs []string
				for _, r := range got {
					pairs = append(pairs, *r[0]+"/"+*r[1])
				}
				if err != nil || strings.Join(pairs, " ") != tt.want {
					t.Errorf("filter %+v: rows %q, %v; want %s", tt.f, pairs, err, tt.want)
				}
			}
		}},
		{"parent rows leave out soft-deleted rows", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), orders(b)
			tbl.Deletes = contract.DeletesSoft
			MustPrepare(t, s, tbl)
			rows := rowsOf(1, 2, 3)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 3}, rows...)
			keys, err := s.KeyForms(ctx, tbl, []contract.Row{rows[0], rows[2]})
			if err != nil {
				t.Fatal(err)
			}
			req := contract.SweepRequest{Mode: contract.DeletesSoft, MaxRatio: 1, At: at, Keys: keysOf(keys)}
			priorSawNone(&req)
			res, err := s.Sweep(ctx, tbl, req)
			if err != nil || res.Deleted != 1 {
				t.Fatalf("sweep: %+v, %v; want 1 row marked", res, err)
			}
			got, err := reader(t, b).ParentRows(ctx, tbl, []string{"id"}, contract.ParentFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if s := ids(t, got); s != "1,3" {
				t.Errorf("ids %s, want 1,3: a parent marked deleted has no children to walk", s)
			}
		}},
		{"missing parents by the keys a pass listed", func(t *testing.T, b *DB) {
			// The child's check of its parent table (docs/deletions.md,
			// "Two passes"): a listed key with no row is named, a row
			// marked deleted is no lack.
			s, tbl := b.Sink(t), orders(b)
			tbl.Deletes = contract.DeletesSoft
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 4}, rowsOf(1, 2, 3, 4)...)
			listed, err := s.KeyForms(ctx, tbl, rowsOf(1, 2, 3, 4, 2))
			if err != nil {
				t.Fatal(err)
			}
			req := contract.SweepRequest{Mode: contract.DeletesSoft, MaxRatio: 1, At: at, Keys: keysOf(listed[:3])}
			priorSawNone(&req)
			if res, err := s.Sweep(ctx, tbl, req); err != nil || res.Deleted != 1 {
				t.Fatalf("sweep: %+v, %v; want order 4 marked", res, err)
			}
			r := reader(t, b)
			if got, err := r.MissingParents(ctx, tbl, keysOf(listed)); got != "" || err != nil {
				t.Errorf("orders 1-4, 4 marked deleted: missing %q, %v; want none", got, err)
			}
			more, err := s.KeyForms(ctx, tbl, rowsOf(5))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := r.MissingParents(ctx, tbl, keysOf(append(listed, more...))); got != "id=5" || err != nil {
				t.Errorf("order 5 never written: missing %q, %v; want id=5", got, err)
			}
			lines := b.Table("lines", []string{"order_id", "n"}, Col("order_id", contract.TypeInteger), Col("n", contract.TypeText))
			MustPrepare(t, s, lines)
			all := []contract.Row{Row(int64(1), "a"), Row(int64(1), "b"), Row(int64(2), "a")}
			MustUpsert(t, s, lines, contract.Counts{Inserted: 3}, all...)
			keys, err := s.KeyForms(ctx, lines, all)
			if err != nil {
				t.Fatal(err)
			}
			req = contract.SweepRequest{Mode: contract.DeletesHard, MaxRatio: 1, At: at, Keys: keysOf([]string{keys[0], keys[2]})}
			priorSawNone(&req)
			if res, err := s.Sweep(ctx, lines, req); err != nil || res.Deleted != 1 {
				t.Fatalf("sweep of lines: %+v, %v; want line 1/b deleted", res, err)
			}
			if got, err := r.MissingParents(ctx, lines, keysOf(keys)); got != "order_id=1 n=b" || err != nil {
				t.Errorf("line 1/b deleted: missing %q, %v; want order_id=1 n=b", got, err)
			}
			gone := b.Table("gone", []string{"id"}, Col("id", contract.TypeInteger))
			if _, err := r.MissingParents(ctx, gone, keysOf(listed)); err == nil || !strings.Contains(err.Error(), "gone") {
				t.Errorf("missing table: %v; want an error naming it", err)
			}
		}},
		{"parent rows of a missing column or table", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), orders(b)
			MustPrepare(t, s, tbl)
			r := reader(t, b)
			if _, err := r.ParentRows(ctx, tbl, []string{"id", "nope"}, contract.ParentFilter{}); err == nil || !strings.Contains(err.Error(), "nope") {
				t.Errorf("missing column: %v; want an error naming it", err)
			}
			gone := b.Table("gone", []string{"id"}, Col("id", contract.TypeInteger))
			if _, err := r.ParentRows(ctx, gone, []string{"id"}, contract.ParentFilter{}); err == nil || !strings.Contains(err.Error(), "gone") {
				t.Errorf("missing table: %v; want an error naming it", err)
			}
		}},
	}
}

// sameText reports whether text, a value ParentRows returned for a column
// of type ct, is v in the text form ParentRows promises: decimal notation
// for integers and decimals (of equal value), a boolean strconv.ParseBool
// reads, RFC 3339
// timestamps (of equal instant), text as it is.
func sameText(text string, ct contract.ColumnType, v any) bool {
	switch ct {
	case contract.TypeInteger:
		n, err := strconv.ParseInt(text, 10, 64)
		return err == nil && n == v
	case contract.TypeNumeric:
		a, ok1 := new(big.Rat).SetString(text)
		b, ok2 := new(big.Rat).SetString(fmt.Sprint(v))
		return ok1 && ok2 && a.Cmp(b) == 0 && !strings.ContainsAny(text, "eE")
	case contract.TypeBoolean:
		b, err := strconv.ParseBool(text)
		return err == nil && b == v // SQLite answers 1 or 0: the engine reads either
	case contract.TypeTimestamp:
		at, err := time.Parse(time.RFC3339Nano, text)
		want, ok := v.(time.Time)
		return err == nil && ok && at.Equal(want)
	}
	return text == fmt.Sprint(v)
}
