package sink_test

import (
	"fmt"
	"testing"

	idsync "github.com/idemsync/idemsync/sync"
)

// TestConformanceKeys checks that both sinks let the database decide which
// stored row a key names: keys equal in the database are one row whatever
// Go type or spelling they arrive in.
func TestConformanceKeys(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, b *backend)
	}{
		{"integer primary key with a text mapping", func(t *testing.T, b *backend) {
			s := b.open(t)
			tbl := b.table("intpk", []string{"id"}, col("id", idsync.TypeText), col("name", idsync.TypeText))
			b.exec(t, "CREATE TABLE "+qname(tbl)+` (id INTEGER PRIMARY KEY, name TEXT)`)
			mustPrepare(t, s, tbl)
			rows := []idsync.Row{row("1", "a"), row("2", "b")}
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 2}, rows...)
			// Every later run: the same keys are the same rows.
			mustUpsert(t, s, tbl, idsync.Counts{Unchanged: 2}, rows...)
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 1, Unchanged: 1, Inserted: 1},
				row("1", "A"), row("2", "b"), row("3", "c"))
			got := b.rows(t, "SELECT id, name FROM "+qname(tbl)+" ORDER BY id")
			if want := "[[1 A] [2 b] [3 c]]"; fmt.Sprint(got) != want {
				t.Fatalf("rows %v, want %s", got, want)
			}
		}},
		{"integer primary key with a numeric mapping", func(t *testing.T, b *backend) {
			if b.name == "postgres" {
				t.Skip("PostgreSQL refuses 1.0 as input for an integer column")
			}
			s := b.open(t)
			tbl := b.table("intpk_num", []string{"id"}, col("id", idsync.TypeNumeric), col("name", idsync.TypeText))
			b.exec(t, "CREATE TABLE "+qname(tbl)+` (id INTEGER PRIMARY KEY, name TEXT)`)
			mustPrepare(t, s, tbl)
			// 1, 1.0 and 1e0 are one key; the last wins.
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 2, Unchanged: 2},
				row("1", "a"), row("1.0", "b"), row("2", "c"), row("1e0", "d"))
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 1, Unchanged: 1}, row("1.00", "e"), row("2", "c"))
			got := b.rows(t, "SELECT id, name FROM "+qname(tbl)+" ORDER BY id")
			if want := "[[1 e] [2 c]]"; fmt.Sprint(got) != want {
				t.Fatalf("rows %v, want %s", got, want)
			}
		}},
		{"numeric keys compared by value", func(t *testing.T, b *backend) {
			s := b.open(t)
			tbl := b.table("numkeys_value", []string{"k"}, col("k", idsync.TypeNumeric), col("v", idsync.TypeText))
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 2, Unchanged: 1}, row("1.0", "a"), row("1", "b"), row("2.50", "c"))
			// Another spelling of a stored key, in a later page, updates it.
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 2}, row("1.000", "x"), row("25e-1", "y"))
			mustUpsert(t, s, tbl, idsync.Counts{Unchanged: 2}, row("1.000", "x"), row("25e-1", "y"))
			got := b.rows(t, "SELECT v FROM "+qname(tbl)+" ORDER BY k")
			if want := "[[x] [y]]"; fmt.Sprint(got) != want {
				t.Fatalf("rows %v, want %s", got, want)
			}
		}},
		{"composite key with a numeric part", func(t *testing.T, b *backend) {
			s := b.open(t)
			tbl := b.table("compnum", []string{"tenant", "n"},
				col("tenant", idsync.TypeText), col("n", idsync.TypeNumeric), col("v", idsync.TypeText))
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 2, Unchanged: 1},
				row("a", "10", "1"), row("b", "10", "2"), row("a", "1e1", "3"))
			// The stored key keeps one spelling; another spelling is new content.
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 1, Unchanged: 1}, row("a", "10.0", "3"), row("b", "10", "2"))
			if got := b.rows(t, "SELECT count(*) FROM "+qname(tbl)); fmt.Sprint(got) != "[[2]]" {
				t.Fatalf("count %v, want 2 rows", got)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachSink(t, tc.run)
		})
	}
}
