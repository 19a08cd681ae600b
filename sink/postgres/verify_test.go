package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// A column altered to a narrower type: values it still holds exactly are
// unchanged; a value it can no longer hold as written fails the verify
// page with an error naming the table, column and key (a rewrite would
// store the rounded or cut value again), and nothing of the page is
// written.
func TestVerifyNarrowedColumn(t *testing.T) {
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, col, alter, using string
		shown                   string       // the type as the error names it
		fits, lost              contract.Row // lost does not fit the narrowed type
	}{
		{"numeric scale", "n", "numeric(10,1)", "", "numeric(10,1)",
			sinktest.Row("a", "12.5", "abc", at), sinktest.Row("b", "12.55", "abc", at)},
		{"timestamp precision", "ts", "timestamp(0)", "", "timestamp(0) without time zone",
			sinktest.Row("a", "1", "abc", at), sinktest.Row("b", "1", "abc", at.Add(1500*time.Millisecond))},
		{"varchar length", "s", "varchar(3)", " USING left(s, 3)", "character varying(3)",
			sinktest.Row("a", "1", "abc", at), sinktest.Row("b", "1", "abcd", at)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newPostgresBackend(t)
			s := b.Sink(t)
			tbl := b.Table("narrow", []string{"id"}, sinktest.Col("id", contract.TypeText),
				sinktest.Col("n", contract.TypeNumeric), sinktest.Col("s", contract.TypeText), sinktest.Col("ts", contract.TypeTimestamp))
			sinktest.MustPrepare(t, s, tbl)
			sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, tc.fits, tc.lost)
			b.Exec(t, "ALTER TABLE "+sinktest.QName(tbl)+" ALTER COLUMN "+tc.col+" TYPE "+tc.alter+tc.using)
			sinktest.MustPrepare(t, s, tbl) // a new run prepares the table again
			sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 1}, tc.fits)
			before := b.Read(t, tbl)
			_, err := s.Upsert(context.Background(), sinktest.Verifying(tbl), []contract.Row{tc.fits, tc.lost})
			if contract.ClassOf(err) != contract.Permanent {
				t.Fatalf("verify of a value the column cannot hold: err %v (%v), want %v", err, contract.ClassOf(err), contract.Permanent)
			}
			for _, want := range []string{"narrow", `column "` + tc.col + `"`, tc.shown, "id=b"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			t.Logf("%v; hint: %s", err, contract.Hint(err))
			if hint := contract.Hint(err); !strings.Contains(hint, "ALTER TABLE") {
				t.Errorf("hint %q does not say how to widen the column", hint)
			}
			sinktest.AssertRows(t, b.Read(t, tbl), before)
		})
	}
}

// A table the user created with types of their own that hold every value
// exactly: a verify upsert of the rows as written changes nothing (their
// stored forms compare equal), and a hand edit is still found.
func TestVerifyUserTypesUntouched(t *testing.T) {
	b := newPostgresBackend(t)
	s := b.Sink(t)
	tbl := b.Table("legacy", []string{"id"}, sinktest.Col("id", contract.TypeInteger),
		sinktest.Col("t", contract.TypeText), sinktest.Col("i", contract.TypeInteger), sinktest.Col("n", contract.TypeNumeric),
		sinktest.Col("ts", contract.TypeTimestamp), sinktest.Col("j", contract.TypeJSON), sinktest.Col("c", contract.TypeText),
		sinktest.Col("ci", contract.TypeText))
	tbl.Create = false
	ci := sqlkit.QuoteIdent(b.Schema) + ".ci"
	b.Exec(t, "CREATE COLLATION "+ci+" (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
	b.Exec(t, "CREATE TABLE "+sinktest.QName(tbl)+` (id integer PRIMARY KEY, t varchar(20), i integer, n numeric(12,2),
		ts timestamp, j json, c char(4), ci text COLLATE `+ci+`, _idemsync_hash text, _idemsync_synced_at timestamptz)`)
	sinktest.MustPrepare(t, s, tbl)
	at := time.Date(2024, 5, 1, 12, 0, 0, 123456000, time.UTC)
	rows := []contract.Row{
		sinktest.Row(int64(1), "héllo", int64(7), "12.5", at, `{"b":1,"a":[1,2]}`, "ab", "Ann"),
		sinktest.Row(int64(2), "", int64(-7), "-0.01", at.Add(time.Hour), `[]`, "abcd", "Bob"),
		sinktest.Row(int64(3), nil, nil, nil, nil, nil, nil, nil),
	}
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 3}, rows...)
	sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 3}, rows...)
	b.Exec(t, "UPDATE "+sinktest.QName(tbl)+` SET j = '{"a":[1,2],"b":1}' WHERE id = 1`) // json keeps its text
	b.Exec(t, "UPDATE "+sinktest.QName(tbl)+` SET ci = 'BOB' WHERE id = 2`)              // equal under the column's collation, not the same
	sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Updated: 2, Unchanged: 1}, rows...)
	sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 3}, rows...)
}

// A verify upsert of a table nobody touched, in a later run (its own
// sink), writes nothing: no parent row is locked or rewritten (a lock is
// written, WAL and a dirty page, as for an unchanged re-sync: issue 31),
// and no child row is deleted and written again.
func TestVerifyUntouchedWritesNothing(t *testing.T) {
	b := newPostgresBackend(t)
	s, tbl := b.Sink(t), sinktest.ChildTable(b, "")
	sinktest.MustPrepare(t, s, tbl)
	rows := []contract.Row{sinktest.Person("a", map[int64]int64{10: 1, 11: 2}, "x", "y"), sinktest.Person("c", map[int64]int64{20: 5}, "z")}
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Children: map[string]contract.ChildCounts{
		"people_lines": {Inserted: 3}, "people_line_notes": {Inserted: 5}}}, rows...)
	// Rows another writer has put there: the table is no longer one this
	// sink filled alone, as after any earlier run.
	b.Exec(t, "INSERT INTO "+sinktest.QName(tbl)+" (id, name, age, _idemsync_hash) VALUES ('z', 'z', 1, 'h')")
	tables := []*contract.Table{tbl, &tbl.Children[0].Table, &tbl.Children[0].Table.Children[0].Table}
	xmins := func() string {
		var out []string
		for _, d := range tables {
			for _, r := range b.Rows(t, "SELECT xmin::text, xmax::text FROM "+sinktest.QName(d)+" ORDER BY ctid") {
				out = append(out, fmt.Sprint(r...))
			}
		}
		return strings.Join(out, ",")
	}
	before := xmins()
	s = b.Sink(t)
	sinktest.MustPrepare(t, s, tbl)
	n, err := s.Upsert(context.Background(), sinktest.Verifying(tbl), rows)
	if err != nil || n.Wrote() || n.Unchanged != 2 {
		t.Errorf("verify upsert of untouched rows: %+v, %v; want 2 unchanged, nothing written", n, err)
	}
	if after := xmins(); after != before {
		t.Errorf("a verify upsert of untouched rows wrote or locked rows (xmin xmax by table):\nbefore %s\nafter  %s", before, after)
	}
	// Each edit by hand of a child table rewrites the children of its
	// parent only (the parent row itself is unchanged), and a second
	// verify upsert writes nothing again.
	lines, notes := sinktest.QName(tables[1]), sinktest.QName(tables[2])
	for _, c := range []struct {
		edit string
		want map[string]contract.ChildCounts
	}{
		{"UPDATE " + lines + " SET qty = 9 WHERE people_id = 'c'", map[string]contract.ChildCounts{"people_lines": {Inserted: 1, Deleted: 1}, "people_line_notes": {Inserted: 1, Deleted: 1}}},
		{"UPDATE " + notes + " SET note = 'X' WHERE people_id = 'a' AND people_lines_lid = 11 AND _idemsync_pos = 0", map[string]contract.ChildCounts{"people_lines": {Inserted: 2, Deleted: 2}, "people_line_notes": {Inserted: 4, Deleted: 4}}},
		{"DELETE FROM " + notes + " WHERE people_id = 'c'", map[string]contract.ChildCounts{"people_lines": {Inserted: 1, Deleted: 1}, "people_line_notes": {Inserted: 1}}},
		{"INSERT INTO " + lines + " (people_id, lid, qty) VALUES ('c', 99, 1)", map[string]contract.ChildCounts{"people_lines": {Inserted: 1, Deleted: 2}, "people_line_notes": {Inserted: 1, Deleted: 1}}},
		{"UPDATE " + notes + " SET _idemsync_hash = NULL WHERE people_id = 'c'", map[string]contract.ChildCounts{"people_lines": {Inserted: 1, Deleted: 1}, "people_line_notes": {Inserted: 1, Deleted: 1}}},
		{"UPDATE " + lines + " SET people_id = 'c' WHERE people_id = 'a' AND lid = 10", map[string]contract.ChildCounts{"people_lines": {Inserted: 3, Deleted: 3}, "people_line_notes": {Inserted: 5, Deleted: 5}}},
	} {
		b.Exec(t, c.edit)
		sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 2, Children: c.want}, rows...)
		before := xmins()
		if n, err := s.Upsert(context.Background(), sinktest.Verifying(tbl), rows); err != nil || n.Wrote() {
			t.Errorf("after %s: a second verify upsert: %+v, %v; want nothing written", c.edit, n, err)
		}
		if after := xmins(); after != before {
			t.Errorf("after %s: a second verify upsert wrote or locked rows", c.edit)
		}
	}
	wantLines := []string{"a|10|1", "a|11|2", "c|20|5"}
	if got := b.Rows(t, "SELECT string_agg(people_id || '|' || lid || '|' || qty, ',' ORDER BY 1) FROM "+lines); got[0][0] != strings.Join(wantLines, ",") {
		t.Errorf("lines after the verify upserts: %v, want %v", got[0][0], wantLines)
	}
}

// On a soft table, a child row marked deleted by hand under a live parent
// is not stored as written: verify rewrites that parent's children,
// unmarked, and then writes nothing.
func TestVerifyChildMarkedByHand(t *testing.T) {
	b := newPostgresBackend(t)
	s, tbl := b.Sink(t), sinktest.ChildTable(b, contract.DeletesSoft)
	sinktest.MustPrepare(t, s, tbl)
	rows := []contract.Row{sinktest.Person("a", map[int64]int64{10: 1}, "x"), sinktest.Person("c", map[int64]int64{20: 5}, "z")}
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Children: map[string]contract.ChildCounts{
		"people_lines": {Inserted: 2}, "people_line_notes": {Inserted: 2}}}, rows...)
	notes := sinktest.QName(&tbl.Children[0].Table.Children[0].Table)
	b.Exec(t, `UPDATE `+notes+` SET _idemsync_deleted_at = now() WHERE people_id = 'c'`)
	sinktest.MustUpsert(t, s, sinktest.Verifying(tbl), contract.Counts{Unchanged: 2, Children: map[string]contract.ChildCounts{
		"people_lines": {Inserted: 1, Deleted: 1}, "people_line_notes": {Inserted: 1, Deleted: 1}}}, rows...)
	if got := b.Rows(t, `SELECT count(*) FROM `+notes+` WHERE _idemsync_deleted_at IS NOT NULL`); got[0][0] != int64(0) {
		t.Errorf("%v child rows still marked after verify", got[0][0])
	}
	if n, err := s.Upsert(context.Background(), sinktest.Verifying(tbl), rows); err != nil || n.Wrote() {
		t.Errorf("a second verify upsert: %+v, %v; want nothing written", n, err)
	}
}
