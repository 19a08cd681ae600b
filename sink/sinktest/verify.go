package sinktest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// verifyCases check Table.Verify: rows changed outside idemsync (their
// hash left as it was) are rewritten and counted as updated, and a table
// nobody touched is all unchanged.
func verifyCases() []testCase {
	return []testCase{
		{"verify untouched table is unchanged", verifyUntouched},
		{"verify rewrites rows edited by hand", verifyEdited},
		{"verify rewrites a dropped and re-added column", verifyDroppedColumn},
		{"verify every column type", verifyEveryType},
		{"verify keeps the version guard", verifyVersionGuard},
	}
}

// Verifying returns a copy of tbl with Verify set.
func Verifying(tbl *contract.Table) *contract.Table {
	v := *tbl
	v.Verify = true
	return &v
}

// typesTable is a table with one column of every type, and rows whose
// values exercise each type's stored form.
func typesTable(b *DB) (*contract.Table, []contract.Row) {
	tbl := b.Table("types", []string{"id"},
		Col("id", contract.TypeInteger), Col("t", contract.TypeText), Col("i", contract.TypeInteger),
		Col("r", contract.TypeReal), Col("n", contract.TypeNumeric), Col("b", contract.TypeBoolean),
		Col("ts", contract.TypeTimestamp), Col("j", contract.TypeJSON))
	ist := time.FixedZone("IST", 5*3600+1800)
	var rows []contract.Row
	for i := range int64(8) {
		rows = append(rows, Row(i+1, fmt.Sprintf("héllo %d 'q'", i), i*1000-3, 0.1+float64(i), "12.50", i%2 == 0,
			time.Date(2024, 5, 1, 17, 30, 0, 123456000, ist).Add(time.Duration(i)*time.Hour),
			fmt.Sprintf(`{"a":[1,2,{"b":null}],"ü":"✓","i":%d}`, i)))
	}
	rows = append(rows, Row(int64(9), nil, nil, nil, nil, nil, nil, nil))
	return tbl, rows
}

// verifyUntouched: a verify upsert of the rows as written changes nothing,
// with every column type and NULLs, and does not touch synced-at.
func verifyUntouched(t *testing.T, b *DB) {
	s := b.Sink(t)
	tbl, rows := typesTable(b)
	MustPrepare(t, s, tbl)
	MustUpsert(t, s, tbl, contract.Counts{Inserted: int64(len(rows))}, rows...)
	before := syncedAt(t, b, tbl)
	time.Sleep(5 * time.Millisecond)
	MustUpsert(t, s, Verifying(tbl), contract.Counts{Unchanged: int64(len(rows))}, rows...)
	if after := syncedAt(t, b, tbl); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("synced_at rewritten by a verify upsert of untouched rows: %v -> %v", before, after)
	}
	AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows...))
}

// verifyEdited: hand edits keep the hash, so a plain upsert leaves them;
// a verify upsert rewrites exactly the edited rows, and a second one
// finds nothing to do.
func verifyEdited(t *testing.T, b *DB) {
	s, tbl := b.Sink(t), People(b)
	MustPrepare(t, s, tbl)
	rows := []contract.Row{Row("a", "Ann", int64(30)), Row("b", "Bob", int64(40)), Row("c", "Cy", nil), Row("d", "Di", int64(7))}
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 4}, rows...)
	q := QName(tbl)
	b.Exec(t, "UPDATE "+q+" SET "+sqlkit.QuoteIdent("name")+" = 'Mallory' WHERE id = 'a'")
	b.Exec(t, "UPDATE "+q+" SET "+sqlkit.QuoteIdent("age")+" = NULL WHERE id = 'b'")
	b.Exec(t, "UPDATE "+q+" SET "+sqlkit.QuoteIdent("age")+" = 99 WHERE id = 'c'")
	MustUpsert(t, s, tbl, contract.Counts{Unchanged: 4}, rows...) // the hash alone misses them
	MustUpsert(t, s, Verifying(tbl), contract.Counts{Updated: 3, Unchanged: 1}, rows...)
	AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows...))
	MustUpsert(t, s, Verifying(tbl), contract.Counts{Unchanged: 4}, rows...)
	// An edit still counts once the verify statements are cached.
	b.Exec(t, "UPDATE "+q+" SET "+sqlkit.QuoteIdent("name")+" = 'Eve' WHERE id = 'd'")
	MustUpsert(t, s, Verifying(tbl), contract.Counts{Updated: 1, Unchanged: 3}, rows...)
	AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows...))
}

// verifyDroppedColumn: a column dropped and added again (by Prepare, as a
// new run does) holds NULLs under unchanged hashes; verify fills it.
func verifyDroppedColumn(t *testing.T, b *DB) {
	s, tbl := b.Sink(t), People(b)
	MustPrepare(t, s, tbl)
	rows := []contract.Row{Row("a", "Ann", int64(30)), Row("b", "Bob", nil), Row("c", "Cy", int64(50))}
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 3}, rows...)
	b.Exec(t, "ALTER TABLE "+QName(tbl)+" DROP COLUMN "+sqlkit.QuoteIdent("age"))
	MustPrepare(t, s, tbl)
	MustUpsert(t, s, Verifying(tbl), contract.Counts{Updated: 2, Unchanged: 1}, rows...)
	AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows...))
	MustUpsert(t, s, Verifying(tbl), contract.Counts{Unchanged: 3}, rows...)
}

// verifyEveryType: one hand edit per column type, each on its own row;
// a value edited to another form of itself (numeric 12.5 for 12.50)
// differs in the stored form and is rewritten too.
func verifyEveryType(t *testing.T, b *DB) {
	s := b.Sink(t)
	tbl, rows := typesTable(b)
	MustPrepare(t, s, tbl)
	MustUpsert(t, s, tbl, contract.Counts{Inserted: int64(len(rows))}, rows...)
	q, id := QName(tbl), sqlkit.QuoteIdent("id")
	edits := []string{
		`"t" = 'edited'`,
		`"i" = 5`,
		`"r" = 2.5`,
		`"n" = '12.5'`,
		`"b" = NOT "b"`,
		`"ts" = '2020-01-01T00:00:00Z'`,
		`"j" = '{"z":1}'`,
	}
	for i, e := range edits {
		b.Exec(t, fmt.Sprintf("UPDATE %s SET %s WHERE %s = %d", q, e, id, i+1))
	}
	b.Exec(t, fmt.Sprintf(`UPDATE %s SET "t" = 'x', "n" = '1' WHERE %s = 9`, q, id))
	n := int64(len(edits) + 1)
	MustUpsert(t, s, Verifying(tbl), contract.Counts{Updated: n, Unchanged: int64(len(rows)) - n}, rows...)
	AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows...))
	MustUpsert(t, s, Verifying(tbl), contract.Counts{Unchanged: int64(len(rows))}, rows...)
}

// verifyVersionGuard: with a version column, a hand edit under the same
// version is rewritten, but a stored version newer than the row's (edited
// by hand or not) still wins: verify does not bypass the guard.
func verifyVersionGuard(t *testing.T, b *DB) {
	s := b.Sink(t)
	tbl := b.Table("versioned", []string{"id"},
		Col("id", contract.TypeText), Col("name", contract.TypeText), Col("rev", contract.TypeInteger))
	tbl.Version = "rev"
	MustPrepare(t, s, tbl)
	rows := []contract.Row{Row("a", "Ann", int64(1)), Row("b", "Bob", int64(1))}
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, rows...)
	q := QName(tbl)
	b.Exec(t, "UPDATE "+q+` SET "name" = 'edited' WHERE id = 'a'`)
	b.Exec(t, "UPDATE "+q+` SET "name" = 'edited', "rev" = 2 WHERE id = 'b'`)
	MustUpsert(t, s, Verifying(tbl), contract.Counts{Updated: 1, Unchanged: 1}, rows...)
	got := b.Read(t, tbl)
	if len(got) != 2 || got[0]["name"] != "Ann" || got[1]["name"] != "edited" || got[1]["rev"] != "2" {
		t.Errorf("after verify: %v, want a rewritten and b (newer stored version) kept", got)
	}
}
