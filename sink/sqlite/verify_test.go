package sqlite_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
)

// A value rewritten in another storage class, or in another text form of
// the same value, looks alike to a reader but is not what idemsync
// writes: verify rewrites it.
func TestVerifyRewritesOtherStorageClasses(t *testing.T) {
	b := newSQLiteBackend(t)
	s := b.Sink(t)
	tbl := b.Table("forms", []string{"id"},
		sinktest.Col("id", contract.TypeInteger), sinktest.Col("name", contract.TypeText),
		sinktest.Col("age", contract.TypeInteger), sinktest.Col("ts", contract.TypeTimestamp),
		sinktest.Col("r", contract.TypeReal))
	sinktest.MustPrepare(t, s, tbl)
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var rows []contract.Row
	for i := range int64(6) {
		rows = append(rows, sinktest.Row(i+1, "Ann", int64(30), at, 1.5))
	}
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 6}, rows...)
	for _, q := range []string{
		`UPDATE forms SET name = CAST(name AS BLOB) WHERE id = 1`,           // blob 'Ann'
		`UPDATE forms SET age = 'thirty' WHERE id = 2`,                      // text in an integer column
		`UPDATE forms SET ts = '2024-05-01T12:00:00Z' WHERE id = 3`,         // same instant, another form
		`UPDATE forms SET r = '1.5x' WHERE id = 4`,                          // text in a real column
		`UPDATE forms SET age = 30.0, r = '1.5', name = 'Ann' WHERE id = 5`, // converted back by affinity: same
	} {
		b.Exec(t, q)
	}
	if got := b.Rows(t, `SELECT typeof(name) || typeof(age) || typeof(r) FROM forms WHERE id = 5`); got[0][0] != "textintegerreal" {
		t.Fatalf("row 5 stored as %v, want text, integer, real", got)
	}
	sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Updated: 4, Unchanged: 2}, rows...)
	sinktest.AssertRows(t, b.Read(t, tbl), sinktest.Want(t, tbl, rows...))
	got := b.Rows(t, `SELECT count(*) FROM forms WHERE typeof(name) = 'text' AND typeof(age) = 'integer' AND typeof(r) = 'real' AND ts = '2024-05-01T12:00:00.000000000Z'`)
	if got[0][0] != int64(6) {
		t.Errorf("rows in the stored forms after verify = %v, want 6", got[0][0])
	}
	sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 6}, rows...)
}

// A table the user created with declared types of their own (other
// affinities): a verify upsert of the rows as written changes nothing,
// since both sides are compared after the column's affinity, and a hand
// edit is still found. (A numeric the NUMERIC column cannot hold, more
// digits than a REAL's, fails the page: TestSQLiteAffinityLoses.)
func TestVerifyUserTypesUntouched(t *testing.T) {
	b := newSQLiteBackend(t)
	s := b.Sink(t)
	tbl := b.Table("legacy", []string{"id"}, sinktest.Col("id", contract.TypeInteger),
		sinktest.Col("n", contract.TypeNumeric), sinktest.Col("ts", contract.TypeTimestamp),
		sinktest.Col("b", contract.TypeBoolean), sinktest.Col("j", contract.TypeJSON),
		sinktest.Col("s", contract.TypeText), sinktest.Col("r", contract.TypeReal), sinktest.Col("ci", contract.TypeText))
	tbl.Create = false
	b.Exec(t, `CREATE TABLE legacy (id INT PRIMARY KEY, n NUMERIC, ts DATETIME, b BOOLEAN, j JSON,
		s VARCHAR(3), r FLOAT, ci TEXT COLLATE NOCASE, _idemsync_hash TEXT, _idemsync_synced_at TEXT)`)
	sinktest.MustPrepare(t, s, tbl)
	at := time.Date(2024, 5, 1, 12, 0, 0, 123456000, time.UTC)
	rows := []contract.Row{
		sinktest.Row(int64(1), "12.50", at, true, `{"a":1}`, "longer than three", 0.1, "Ann"),
		sinktest.Row(int64(2), "123456789012.125", at, false, `[1,2]`, "12", 1e300, "Bob"),
		sinktest.Row(int64(3), "7", at, true, `"7"`, "007", math.Copysign(0, -1), ""),
		sinktest.Row(int64(4), nil, nil, nil, nil, nil, nil, nil),
	}
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 4}, rows...)
	sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 4}, rows...)
	b.Exec(t, `UPDATE legacy SET n = 12.51 WHERE id = 1`)
	b.Exec(t, `UPDATE legacy SET ci = 'BOB' WHERE id = 2`) // equal under the column's NOCASE, not the same
	sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Updated: 2, Unchanged: 2}, rows...)
	sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 4}, rows...)
}

// A verify upsert of a table nobody touched writes nothing, child tables
// included (their rows are not deleted and written again); each edit by
// hand of a child table rewrites the children of its parent only, and a
// second verify upsert writes nothing again. Triggers log every write.
func TestVerifyUntouchedWritesNothing(t *testing.T) {
	b := newSQLiteBackend(t)
	s, tbl := b.Sink(t), sinktest.ChildTable(b, "")
	sinktest.MustPrepare(t, s, tbl)
	rows := []contract.Row{sinktest.Person("a", map[int64]int64{10: 1, 11: 2}, "x", "y"), sinktest.Person("c", map[int64]int64{20: 5}, "z")}
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Children: map[string]contract.ChildCounts{
		"people_lines": {Inserted: 3}, "people_line_notes": {Inserted: 5}}}, rows...)
	b.Exec(t, `CREATE TABLE writes (n INTEGER)`)
	for _, name := range []string{"people", "people_lines", "people_line_notes"} {
		for _, ev := range []string{"INSERT", "UPDATE", "DELETE"} {
			b.Exec(t, "CREATE TRIGGER "+name+"_"+ev+" AFTER "+ev+" ON "+name+" BEGIN INSERT INTO writes VALUES (1); END")
		}
	}
	writes := func() any { return b.Rows(t, `SELECT count(*) FROM writes`)[0][0] }
	s = b.Sink(t)
	sinktest.MustPrepare(t, s, tbl)
	if n, err := s.Upsert(context.Background(), sinktest.Verifying(tbl), rows); err != nil || n.Wrote() || n.Unchanged != 2 {
		t.Errorf("verify upsert of untouched rows: %+v, %v; want 2 unchanged, nothing written", n, err)
	}
	if w := writes(); w != int64(0) {
		t.Errorf("a verify upsert of untouched rows wrote %v rows", w)
	}
	for _, c := range []struct {
		edit string
		want map[string]contract.ChildCounts
	}{
		{"UPDATE people_lines SET qty = 9 WHERE people_id = 'c'", map[string]contract.ChildCounts{"people_lines": {Inserted: 1, Deleted: 1}, "people_line_notes": {Inserted: 1, Deleted: 1}}},
		{"UPDATE people_line_notes SET note = 'X' WHERE people_id = 'a' AND people_lines_lid = 11 AND _idemsync_pos = 0", map[string]contract.ChildCounts{"people_lines": {Inserted: 2, Deleted: 2}, "people_line_notes": {Inserted: 4, Deleted: 4}}},
		{"UPDATE people_line_notes SET note = CAST(note AS BLOB) WHERE people_id = 'c'", map[string]contract.ChildCounts{"people_lines": {Inserted: 1, Deleted: 1}, "people_line_notes": {Inserted: 1, Deleted: 1}}},
		{"DELETE FROM people_line_notes WHERE people_id = 'c'", map[string]contract.ChildCounts{"people_lines": {Inserted: 1, Deleted: 1}, "people_line_notes": {Inserted: 1}}},
		{"INSERT INTO people_lines (people_id, lid, qty) VALUES ('c', 99, 1)", map[string]contract.ChildCounts{"people_lines": {Inserted: 1, Deleted: 2}, "people_line_notes": {Inserted: 1, Deleted: 1}}},
		{"UPDATE people_line_notes SET _idemsync_hash = NULL WHERE people_id = 'c'", map[string]contract.ChildCounts{"people_lines": {Inserted: 1, Deleted: 1}, "people_line_notes": {Inserted: 1, Deleted: 1}}},
		{"UPDATE people_lines SET people_id = 'c' WHERE people_id = 'a' AND lid = 10", map[string]contract.ChildCounts{"people_lines": {Inserted: 3, Deleted: 3}, "people_line_notes": {Inserted: 5, Deleted: 5}}},
	} {
		b.Exec(t, c.edit)
		sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 2, Children: c.want}, rows...)
		before := writes()
		if n, err := s.Upsert(context.Background(), sinktest.Verifying(tbl), rows); err != nil || n.Wrote() {
			t.Errorf("after %s: a second verify upsert: %+v, %v; want nothing written", c.edit, n, err)
		}
		if after := writes(); after != before {
			t.Errorf("after %s: a second verify upsert wrote %v rows", c.edit, after.(int64)-before.(int64))
		}
	}
	got := b.Rows(t, `SELECT group_concat(people_id || '|' || lid || '|' || qty, ',') FROM (SELECT * FROM people_lines ORDER BY 1, 2)`)
	if got[0][0] != "a|10|1,a|11|2,c|20|5" {
		t.Errorf("lines after the verify upserts: %v", got[0][0])
	}
}

// On a soft table, a child row marked deleted by hand under a live parent
// is not stored as written: verify rewrites that parent's children,
// unmarked, and then writes nothing.
func TestVerifyChildMarkedByHand(t *testing.T) {
	b := newSQLiteBackend(t)
	s, tbl := b.Sink(t), sinktest.ChildTable(b, contract.DeletesSoft)
	sinktest.MustPrepare(t, s, tbl)
	rows := []contract.Row{sinktest.Person("a", map[int64]int64{10: 1}, "x"), sinktest.Person("c", map[int64]int64{20: 5}, "z")}
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Children: map[string]contract.ChildCounts{
		"people_lines": {Inserted: 2}, "people_line_notes": {Inserted: 2}}}, rows...)
	b.Exec(t, `UPDATE people_line_notes SET _idemsync_deleted_at = '2024-01-01T00:00:00.000000000Z' WHERE people_id = 'c'`)
	sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 2, Children: map[string]contract.ChildCounts{
		"people_lines": {Inserted: 1, Deleted: 1}, "people_line_notes": {Inserted: 1, Deleted: 1}}}, rows...)
	if got := b.Rows(t, `SELECT count(*) FROM people_line_notes WHERE _idemsync_deleted_at IS NOT NULL`); got[0][0] != int64(0) {
		t.Errorf("%v child rows still marked after verify", got[0][0])
	}
	sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 2}, rows...)
}

// A column declared by hand with a numeric affinity converts the text
// written into it: a value it changes fails the page (Permanent, naming
// the table, column, declared type and key; nothing written), verifying
// or not, where values it keeps pass: "007" in an INTEGER column, a
// numeric of 20 digits in a NUMERIC one, the JSON number
// 12345678901234567890 in a JSON one (NUMERIC affinity).
func TestSQLiteAffinityLoses(t *testing.T) {
	for _, tc := range []struct {
		name string
		row  contract.Row
		col  string
	}{
		{"text in INTEGER", sinktest.Row(int64(2), "1.5", "007", `[1]`), "s"},
		{"numeric in NUMERIC", sinktest.Row(int64(2), "12345678901234567890.5", "x", `[1]`), "n"},
		{"JSON number in JSON", sinktest.Row(int64(2), "1.5", "x", `12345678901234567890`), "j"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newSQLiteBackend(t)
			s := b.Sink(t)
			tbl := b.Table("lossy", []string{"id"}, sinktest.Col("id", contract.TypeInteger),
				sinktest.Col("n", contract.TypeNumeric), sinktest.Col("s", contract.TypeText), sinktest.Col("j", contract.TypeJSON))
			tbl.Create = false
			b.Exec(t, `CREATE TABLE lossy (id INTEGER PRIMARY KEY, n NUMERIC, s INTEGER, j JSON)`)
			sinktest.MustPrepare(t, s, tbl)
			fits := sinktest.Row(int64(1), "0.50", "7", `1e2`)
			for _, verify := range []bool{false, true} {
				u := tbl
				if verify {
					u = sinktest.Verifying(tbl)
				}
				_, err := s.Upsert(context.Background(), u, []contract.Row{fits, tc.row})
				if contract.ClassOf(err) != contract.Permanent {
					t.Fatalf("verify %v: err %v (%v), want %v", verify, err, contract.ClassOf(err), contract.Permanent)
				}
				t.Logf("%v; hint: %s", err, contract.Hint(err))
				for _, want := range []string{"lossy", `column "` + tc.col + `"`, "id=2"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
				if got := b.Rows(t, `SELECT count(*) FROM lossy`); got[0][0] != int64(0) {
					t.Errorf("the failed page wrote %v rows", got[0][0])
				}
			}
			sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, fits)
			sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 1}, fits)
		})
	}
}
