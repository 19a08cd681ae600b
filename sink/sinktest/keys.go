package sinktest

import (
	"fmt"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// keyCases check that every sink lets the database decide which stored row
// a key names: keys equal in the database are one row whatever Go type or
// spelling they arrive in.
func keyCases() []testCase {
	return []testCase{
		{"integer primary key with a text mapping", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("intpk", []string{"id"}, Col("id", contract.TypeText), Col("name", contract.TypeText))
			b.Exec(t, "CREATE TABLE "+QName(tbl)+` (id INTEGER PRIMARY KEY, name TEXT)`)
			MustPrepare(t, s, tbl)
			rows := []contract.Row{Row("1", "a"), Row("2", "b")}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, rows...)
			// Every later run: the same keys are the same rows.
			MustUpsert(t, s, tbl, contract.Counts{Unchanged: 2}, rows...)
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 1, Inserted: 1},
				Row("1", "A"), Row("2", "b"), Row("3", "c"))
			got := b.Rows(t, "SELECT id, name FROM "+QName(tbl)+" ORDER BY id")
			if want := "[[1 A] [2 b] [3 c]]"; fmt.Sprint(got) != want {
				t.Fatalf("rows %v, want %s", got, want)
			}
		}},
		{"integer primary key with a numeric mapping", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("intpk_num", []string{"id"}, Col("id", contract.TypeNumeric), Col("name", contract.TypeText))
			b.Exec(t, "CREATE TABLE "+QName(tbl)+` (id INTEGER PRIMARY KEY, name TEXT)`)
			MustPrepare(t, s, tbl)
			// 1, 1.0 and 1e0 are one key; the last wins.
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Unchanged: 2},
				Row("1", "a"), Row("1.0", "b"), Row("2", "c"), Row("1e0", "d"))
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 1}, Row("1.00", "e"), Row("2", "c"))
			got := b.Rows(t, "SELECT id, name FROM "+QName(tbl)+" ORDER BY id")
			if want := "[[1 e] [2 c]]"; fmt.Sprint(got) != want {
				t.Fatalf("rows %v, want %s", got, want)
			}
		}},
		{"numeric keys compared by value", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("numkeys_value", []string{"k"}, Col("k", contract.TypeNumeric), Col("v", contract.TypeText))
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Unchanged: 1}, Row("1.0", "a"), Row("1", "b"), Row("2.50", "c"))
			// Another spelling of a stored key, in a later page, updates it.
			MustUpsert(t, s, tbl, contract.Counts{Updated: 2}, Row("1.000", "x"), Row("25e-1", "y"))
			MustUpsert(t, s, tbl, contract.Counts{Unchanged: 2}, Row("1.000", "x"), Row("25e-1", "y"))
			got := b.Rows(t, "SELECT v FROM "+QName(tbl)+" ORDER BY k")
			if want := "[[x] [y]]"; fmt.Sprint(got) != want {
				t.Fatalf("rows %v, want %s", got, want)
			}
		}},
		{"composite key with a numeric part", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("compnum", []string{"tenant", "n"},
				Col("tenant", contract.TypeText), Col("n", contract.TypeNumeric), Col("v", contract.TypeText))
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Unchanged: 1},
				Row("a", "10", "1"), Row("b", "10", "2"), Row("a", "1e1", "3"))
			// The stored key keeps one spelling; another spelling is new content.
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 1}, Row("a", "10.0", "3"), Row("b", "10", "2"))
			if got := b.Rows(t, "SELECT count(*) FROM "+QName(tbl)); fmt.Sprint(got) != "[[2]]" {
				t.Fatalf("count %v, want 2 rows", got)
			}
		}},
	}
}
