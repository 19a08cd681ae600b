package sinktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// readBackCases check what the engine and the commands read besides
// writing: contract.RowReader (idemsync show), contract.RowValidator (bad
// records found before the write) and the Dropped count.
func readBackCases() []testCase {
	ctx := context.Background()
	return []testCase{
		{"latest rows, most recent first, as text", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), People(b)
			if _, _, err := s.LatestRows(ctx, tbl, 5); contract.ClassOf(err) != contract.Permanent || !strings.Contains(fmt.Sprint(err), "people") {
				t.Fatalf("latest rows of a missing table: %v, want a permanent error naming it", err)
			}
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, Row("a", "Ann", int64(30)), Row("b", "Bob", int64(40)))
			time.Sleep(20 * time.Millisecond)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, Row("c", "Cy", nil))
			cols, rows, err := s.LatestRows(ctx, tbl, 2)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"id", "name", "age", contract.ColSyncedAt}; !slices.Equal(cols, want) {
				t.Errorf("columns %q, want %q (table order, no hash)", cols, want)
			}
			if len(rows) != 2 || len(rows[0]) != len(cols) {
				t.Fatalf("rows %v: want 2 of %d values", rows, len(cols))
			}
			if rows[0][0] == nil || *rows[0][0] != "c" || rows[0][2] != nil {
				t.Errorf("first row %v: want c, the latest, with a NULL age", text(rows[0]))
			}
			if rows[1][2] == nil || *rows[1][2] != map[string]string{"a": "30", "b": "40"}[deref(rows[1][0])] {
				t.Errorf("second row %v: want a or b with its age as text", text(rows[1]))
			}
		}},
		{"check row predicts the write", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("checked", []string{"id"}, Col("id", contract.TypeText), Col("note", contract.TypeText), Col("doc", contract.TypeJSON))
			MustPrepare(t, s, tbl)
			plain := Row("plain", "ok", `{"a":1}`)
			if err := s.CheckRow(tbl, plain); err != nil {
				t.Fatalf("check of an ordinary row: %v", err)
			}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, plain)
			// Values some database refuses: either the check says which
			// column, or the write stores the row.
			for _, r := range []contract.Row{
				Row("nul", "a\x00b", nil),
				Row("json-nul", nil, `{"a":"\u0000"}`),
				Row(strings.Repeat("k", 3000), "long key", nil),
			} {
				err := s.CheckRow(tbl, r)
				var bad *contract.BadRecord
				switch {
				case errors.As(err, &bad):
					if bad.Column == "" || bad.Reason == "" {
						t.Errorf("check of %.10q: %+v, want the column and the reason", r.Values[0], bad)
					}
				case err != nil:
					t.Errorf("check of %.10q: %v, want nil or a *contract.BadRecord", r.Values[0], err)
				default:
					MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, r)
				}
			}
			if got := b.Read(t, tbl); len(got) == 0 {
				t.Errorf("no rows read back")
			}
		}},
		{"rows a trigger keeps out count as dropped", func(t *testing.T, b *DB) {
			if b.DropOdd == nil {
				t.Fatalf("%s: DB.DropOdd is not set", b.Name)
			}
			s := b.Sink(t)
			tbl := b.Table("dropped", []string{"id"}, Col("id", contract.TypeInteger), Col("name", contract.TypeText))
			MustPrepare(t, s, tbl)
			b.DropOdd(t, tbl)
			rows := []contract.Row{Row(int64(1), "a"), Row(int64(2), "b"), Row(int64(3), "c"), Row(int64(4), "d")}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Dropped: 2}, rows...)
			// The same page again: the stored rows unchanged, the others
			// dropped again, never counted unchanged.
			MustUpsert(t, s, tbl, contract.Counts{Unchanged: 2, Dropped: 2}, rows...)
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows[1], rows[3]))
		}},
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// text renders a row of LatestRows for messages.
func text(r []*string) []string {
	out := make([]string, len(r))
	for i, p := range r {
		out[i] = deref(p)
	}
	return out
}
