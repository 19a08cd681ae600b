package sinktest

import (
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// freshLoad checks the counts of a first load, which sinks write without
// asking which rows are stored unchanged while the table holds only rows
// they inserted into it empty (sink/sqlite/fresh.go, sink/postgres/fresh.go):
// a record listed again, unchanged or changed, is counted as before, on
// the page that meets it and on the pages after it.
func freshLoad(t *testing.T, b *DB) {
	s, tbl := b.Sink(t), People(b)
	MustPrepare(t, s, tbl)
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, Row("a", "a", int64(1)), Row("b", "b", int64(1)))
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 1, Unchanged: 1}, Row("b", "b", int64(1)), Row("c", "c", int64(1)))
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 1, Updated: 1}, Row("a", "a2", int64(2)), Row("d", "d", int64(1)))
	MustUpsert(t, s, tbl, contract.Counts{Unchanged: 4},
		Row("a", "a2", int64(2)), Row("b", "b", int64(1)), Row("c", "c", int64(1)), Row("d", "d", int64(1)))
	AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "a2", int64(2)), Row("b", "b", int64(1)), Row("c", "c", int64(1)), Row("d", "d", int64(1))))
	// Changed first in a page that inserts nothing: counted as updated.
	MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, Row("c", "c2", int64(1)))
}
