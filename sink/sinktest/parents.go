package sinktest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	idsync "github.com/idemsync/idemsync/sync"
)

// parentCases check idsync.ParentReader, which a child resource's fan-out
// reads its parent's table with (SPEC §8).
func parentCases() []testCase {
	ctx := context.Background()
	orders := func(b *DB) *idsync.Table {
		return b.Table("orders", []string{"id"}, Col("id", idsync.TypeInteger), Col("code", idsync.TypeText),
			Col("paid", idsync.TypeBoolean), Col("at", idsync.TypeTimestamp), Col("total", idsync.TypeNumeric))
	}
	at := time.Date(2024, 5, 1, 12, 30, 0, 500_000_000, time.UTC)
	rowsOf := func(ids ...int64) []idsync.Row {
		var out []idsync.Row
		for _, id := range ids {
			out = append(out, Row(id, fmt.Sprintf("c/%d", id), id%2 == 0, at, "12.50"))
		}
		return out
	}
	reader := func(t *testing.T, b *DB) idsync.ParentReader {
		t.Helper()
		r, ok := b.Sink(t).(idsync.ParentReader)
		if !ok {
			t.Fatalf("%s sink is no idsync.ParentReader", b.Name)
		}
		return r
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
			MustUpsert(t, s, tbl, idsync.Counts{Inserted: 4}, rowsOf(10, 2, 1, 3)...)
			MustUpsert(t, s, tbl, idsync.Counts{Inserted: 1}, Row(int64(4), nil, nil, nil, nil))
			cols := []string{"id", "code", "paid", "at", "total"}
			got, err := reader(t, b).ParentRows(ctx, tbl, cols, idsync.ParentFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if s := ids(t, got); s != "1,2,3,4,10" {
				t.Fatalf("ids %s, want 1,2,3,4,10 (key order, numeric)", s)
			}
			// every value reads back as its column's type
			for i, want := range rowsOf(2) {
				for j, c := range tbl.Columns {
					b, _ := json.Marshal(*got[1][j])
					v, err := idsync.Convert(gjson.ParseBytes(b), c.Type)
					if err != nil || fmt.Sprint(v) != fmt.Sprint(want.Values[j]) {
						t.Errorf("row %d column %s: %q reads back as %v (%v), want %v", i, c.Name, *got[1][j], v, err, want.Values[j])
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
			MustUpsert(t, s, tbl, idsync.Counts{Inserted: 5}, rowsOf(1, 2, 3, 4, 5)...)
			time.Sleep(20 * time.Millisecond)
			since := time.Now()
			time.Sleep(20 * time.Millisecond)
			changed := []idsync.Row{Row(int64(2), "new", true, at, "12.50"), Row(int64(4), "new", true, at, "12.50")}
			MustUpsert(t, s, tbl, idsync.Counts{Updated: 2, Unchanged: 1}, append(changed, rowsOf(5)...)...)
			r := reader(t, b)
			for _, tt := range []struct {
				f    idsync.ParentFilter
				want string
			}{
				{idsync.ParentFilter{Since: since}, "2,4"},
				{idsync.ParentFilter{From: []any{int64(2)}, To: []any{int64(4)}}, "2,3,4"},
				{idsync.ParentFilter{From: []any{int64(3)}}, "3,4,5"},
				{idsync.ParentFilter{Since: since, To: []any{int64(3)}}, "2"},
				{idsync.ParentFilter{Since: time.Now().Add(time.Hour)}, ""},
				// a walk in key order: after the last key read, a batch at a time
				{idsync.ParentFilter{After: []any{int64(2)}, Limit: 2}, "3,4"},
				{idsync.ParentFilter{After: []any{int64(4)}, Limit: 2}, "5"},
				{idsync.ParentFilter{Since: since, After: []any{int64(2)}, Limit: 1}, "4"},
			} {
				got, err := r.ParentRows(ctx, tbl, []string{"id"}, tt.f)
				if err != nil || ids(t, got) != tt.want {
					t.Errorf("filter %+v: %s, %v; want %s", tt.f, ids(t, got), err, tt.want)
				}
			}
		}},
		{"parent rows with a composite key", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("lines", []string{"order_id", "n"}, Col("order_id", idsync.TypeInteger), Col("n", idsync.TypeInteger))
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, idsync.Counts{Inserted: 5}, Row(int64(2), int64(1)), Row(int64(1), int64(2)), Row(int64(1), int64(1)),
				Row(int64(10), int64(1)), Row(int64(2), int64(2)))
			for _, tt := range []struct {
				f    idsync.ParentFilter
				want string
			}{
				{idsync.ParentFilter{From: []any{int64(1), int64(2)}, To: []any{int64(2), int64(1)}}, "1/2 2/1"},
				{idsync.ParentFilter{After: []any{int64(1), int64(2)}, Limit: 2}, "2/1 2/2"}, // keys compared as a row
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
			tbl.Deletes = idsync.DeletesSoft
			MustPrepare(t, s, tbl)
			rows := rowsOf(1, 2, 3)
			MustUpsert(t, s, tbl, idsync.Counts{Inserted: 3}, rows...)
			sw, ok := s.(idsync.Sweeper)
			if !ok {
				t.Fatalf("%s sink is no idsync.Sweeper", b.Name)
			}
			keys, err := sw.KeyForms(ctx, tbl, []idsync.Row{rows[0], rows[2]})
			if err != nil {
				t.Fatal(err)
			}
			req := idsync.SweepRequest{Mode: idsync.DeletesSoft, MaxRatio: 1, At: at, Keys: keysOf(keys)}
			priorSawNone(&req)
			res, err := sw.Sweep(ctx, tbl, req)
			if err != nil || res.Deleted != 1 {
				t.Fatalf("sweep: %+v, %v; want 1 row marked", res, err)
			}
			got, err := reader(t, b).ParentRows(ctx, tbl, []string{"id"}, idsync.ParentFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if s := ids(t, got); s != "1,3" {
				t.Errorf("ids %s, want 1,3: a parent marked deleted has no children to walk", s)
			}
		}},
		{"parent rows of a missing column or table", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), orders(b)
			MustPrepare(t, s, tbl)
			r := reader(t, b)
			if _, err := r.ParentRows(ctx, tbl, []string{"id", "nope"}, idsync.ParentFilter{}); err == nil || !strings.Contains(err.Error(), "nope") {
				t.Errorf("missing column: %v; want an error naming it", err)
			}
			gone := b.Table("gone", []string{"id"}, Col("id", idsync.TypeInteger))
			if _, err := r.ParentRows(ctx, gone, []string{"id"}, idsync.ParentFilter{}); err == nil || !strings.Contains(err.Error(), "gone") {
				t.Errorf("missing table: %v; want an error naming it", err)
			}
		}},
	}
}
