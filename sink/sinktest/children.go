package sinktest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// childCases check child tables (docs/job-file.md, "Child tables"): a
// row's child rows, at every depth, are replaced with it in its page's
// transaction, left alone when it is unchanged, and deleted or marked
// with it by tombstones and sweeps.
func childCases() []testCase {
	return []testCase{
		{"child rows replaced with their parent", childReplace},
		{"child rows deleted with their parent (hard)", func(t *testing.T, b *DB) { childDeletes(t, b, contract.DeletesHard) }},
		{"child rows marked with their parent (soft)", func(t *testing.T, b *DB) { childDeletes(t, b, contract.DeletesSoft) }},
		{"child elements with the same key keep the last, into empty tables", childSameKey},
	}
}

// ChildTable is People with lines (keyed by the person and the line's
// lid) and each line's notes (keyed by position), as jobfile builds them.
func ChildTable(b *DB, deletes string) *contract.Table {
	tbl := People(b)
	tbl.Deletes = deletes
	notes := contract.Child{Name: "notes", Path: "notes", Root: []string{"people_id"}, Table: contract.Table{
		Schema: b.Schema, Name: "people_line_notes", Create: true, Deletes: deletes,
		Key:     []string{"people_id", "people_lines_lid", contract.ColPos},
		Columns: []contract.Column{{Name: "people_id", Type: contract.TypeText}, {Name: "people_lines_lid", Type: contract.TypeInteger}, {Name: contract.ColPos, Type: contract.TypeInteger}, Col("note", contract.TypeText)},
	}}
	lines := contract.Child{Name: "lines", Path: "lines", Root: []string{"people_id"}, Table: contract.Table{
		Schema: b.Schema, Name: "people_lines", Create: true, Deletes: deletes,
		Key:      []string{"people_id", "lid"},
		Columns:  []contract.Column{{Name: "people_id", Type: contract.TypeText}, Col("lid", contract.TypeInteger), Col("qty", contract.TypeInteger)},
		Children: []contract.Child{notes},
	}}
	tbl.Children = []contract.Child{lines}
	return tbl
}

// Person is a People row whose record holds lines {lid: qty} and, per
// line, notes; its hash covers them, as the engine's does.
func Person(id string, lines map[int64]int64, notes ...string) contract.Row {
	r := Row(id, "n-"+id, int64(1))
	var lids []int64
	for lid := range lines {
		lids = append(lids, lid)
	}
	sort.Slice(lids, func(i, j int) bool { return lids[i] < lids[j] })
	var ls []contract.Row
	for _, lid := range lids {
		l := Row(id, lid, lines[lid])
		var ns []contract.Row
		for pos, n := range notes {
			ns = append(ns, Row(id, lid, int64(pos), n))
		}
		l.Children = [][]contract.Row{ns}
		ls = append(ls, l)
	}
	r.Children = [][]contract.Row{ls}
	r.Hash = Row(r.Hash, fmt.Sprint(lines), strings.Join(notes, ",")).Hash
	return r
}

// kidCounts is what a write did to the child tables of childTable: lines
// and notes inserted and deleted (or marked).
func kidCounts(linesIn, linesDel, notesIn, notesDel int64) map[string]contract.ChildCounts {
	var n contract.Counts
	n.AddChild("people_lines", linesIn, linesDel)
	n.AddChild("people_line_notes", notesIn, notesDel)
	return n.Children
}

// childRows returns a child table's rows as "key…=values…[ marked]", sorted.
func childRows(t *testing.T, b *DB, c *contract.Child, soft bool) []string {
	t.Helper()
	var sel []string
	for _, col := range c.Table.Columns {
		e := sqlkit.QuoteIdent(col.Name)
		if col.Type == contract.TypeNumeric || col.Type == contract.TypeJSON {
			e = b.asText(e)
		}
		sel = append(sel, e)
	}
	del := "NULL"
	if soft {
		del = sqlkit.QuoteIdent(contract.ColDeletedAt)
	}
	var out []string
	for _, r := range b.Rows(t, fmt.Sprintf("SELECT %s, %s FROM %s", strings.Join(sel, ", "), del, QName(&c.Table))) {
		var parts []string
		for i, col := range c.Table.Columns {
			parts = append(parts, canon(t, col.Type, r[i]))
		}
		s := strings.Join(parts, "|")
		if r[len(r)-1] != nil {
			s += " marked"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func wantRows(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot  %q\nwant %q", what, got, want)
	}
}

// childReplace writes parents with their lines and notes, then a page
// where one parent's lines shrank, grew and changed and another is
// unchanged: the first's child rows are exactly its new arrays, the
// second's are not written even when the page carries other children for
// it (an unchanged parent's children are the ones stored).
func childReplace(t *testing.T, b *DB) {
	s := b.Sink(t)
	tbl := ChildTable(b, "")
	MustPrepare(t, s, tbl)
	lines, notes := &tbl.Children[0], &tbl.Children[0].Table.Children[0]
	a, c := Person("a", map[int64]int64{10: 1, 11: 2}, "x", "y"), Person("c", map[int64]int64{20: 5}, "z")
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Children: kidCounts(3, 0, 5, 0)}, a, c)
	wantRows(t, "lines after the first page", childRows(t, b, lines, false), "a|10|1", "a|11|2", "c|20|5")
	wantRows(t, "notes after the first page", childRows(t, b, notes, false), "a|10|0|x", "a|10|1|y", "a|11|0|x", "a|11|1|y", "c|20|0|z")
	before := childRows(t, b, &contract.Child{Table: contract.Table{Schema: b.Schema, Name: "people_lines", Columns: []contract.Column{{Name: "people_id", Type: contract.TypeText}, {Name: contract.ColSyncedAt, Type: contract.TypeTimestamp}}}}, false)

	a2 := Person("a", map[int64]int64{11: 3, 12: 1}, "y")
	c2 := c
	c2.Children = Person("c", map[int64]int64{21: 9}).Children // the hash says unchanged: these are not written
	// a's 2 lines and 4 notes are replaced by 2 lines and 2 notes; c's
	// are not counted.
	MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 1, Children: kidCounts(2, 2, 2, 4)}, a2, c2)
	wantRows(t, "lines after the second page", childRows(t, b, lines, false), "a|11|3", "a|12|1", "c|20|5")
	wantRows(t, "notes after the second page", childRows(t, b, notes, false), "a|11|0|y", "a|12|0|y", "c|20|0|z")
	after := childRows(t, b, &contract.Child{Table: contract.Table{Schema: b.Schema, Name: "people_lines", Columns: []contract.Column{{Name: "people_id", Type: contract.TypeText}, {Name: contract.ColSyncedAt, Type: contract.TypeTimestamp}}}}, false)
	if before[len(before)-1] != after[len(after)-1] || !strings.HasPrefix(after[len(after)-1], "c|") {
		t.Fatalf("the unchanged parent's line was rewritten: %q, then %q", before, after)
	}

	// A parent whose array emptied keeps no child row.
	MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Children: kidCounts(0, 2, 0, 2)}, Person("a", nil))
	wantRows(t, "lines after a's emptied", childRows(t, b, lines, false), "c|20|5")
	wantRows(t, "notes after a's emptied", childRows(t, b, notes, false), "c|20|0|z")
}

// childSameKey writes, into empty child tables (where PostgreSQL COPYs
// a first load), a parent whose array holds one key twice: the last
// element is the row.
func childSameKey(t *testing.T, b *DB) {
	s := b.Sink(t)
	tbl := ChildTable(b, "")
	MustPrepare(t, s, tbl)
	lines := &tbl.Children[0]
	a := Person("a", map[int64]int64{10: 1, 11: 2}, "x")
	again := Person("a", map[int64]int64{10: 7}, "y").Children[0][0]
	a.Children[0] = append(a.Children[0], again)
	if _, err := s.Upsert(context.Background(), tbl, []contract.Row{a, Person("c", map[int64]int64{20: 5}, "z")}); err != nil {
		t.Fatalf("upsert: %v", err)
	}
	wantRows(t, "lines", childRows(t, b, lines, false), "a|10|7", "a|11|2", "c|20|5")
}

// childDeletes deletes (hard) or marks (soft) parents by a tombstone and
// by a sweep: their child rows at every depth go or are marked with
// them, in the same write; a marked parent that comes back brings its
// children back unmarked.
func childDeletes(t *testing.T, b *DB, mode string) {
	s := b.Sink(t)
	tbl := ChildTable(b, mode)
	MustPrepare(t, s, tbl)
	soft := mode == contract.DeletesSoft
	lines, notes := &tbl.Children[0], &tbl.Children[0].Table.Children[0]
	a, c, d := Person("a", map[int64]int64{10: 1}, "x"), Person("c", map[int64]int64{20: 5}, "z"), Person("d", map[int64]int64{30: 7}, "w")
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 3, Children: kidCounts(3, 0, 3, 0)}, a, c, d)
	tomb := a
	tomb.Tombstone = true
	MustUpsert(t, s, tbl, contract.Counts{Deleted: 1, Children: kidCounts(0, 1, 0, 1)}, tomb)
	mark := func(r string) string {
		if soft {
			return r + " marked"
		}
		return ""
	}
	keep := func(rows ...string) []string {
		var out []string
		for _, r := range rows {
			if r != "" {
				out = append(out, r)
			}
		}
		return out
	}
	wantRows(t, "lines after a's tombstone", childRows(t, b, lines, soft), keep(mark("a|10|1"), "c|20|5", "d|30|7")...)
	wantRows(t, "notes after a's tombstone", childRows(t, b, notes, soft), keep(mark("a|10|0|x"), "c|20|0|z", "d|30|0|w")...)

	if res := mustSweep(t, s, tbl, sweepReq(t, s, tbl, mode, "c")); res.Deleted != 1 {
		t.Fatalf("sweep deleted %d rows, want d's", res.Deleted)
	}
	wantRows(t, "lines after the sweep", childRows(t, b, lines, soft), keep(mark("a|10|1"), "c|20|5", mark("d|30|7"))...)
	wantRows(t, "notes after the sweep", childRows(t, b, notes, soft), keep(mark("a|10|0|x"), "c|20|0|z", mark("d|30|0|w"))...)

	// d comes back unchanged: written (its mark cleared), its children too.
	// Soft: its marked line and note are replaced; hard: the sweep took them.
	MustUpsert(t, s, tbl, map[bool]contract.Counts{true: {Updated: 1, Children: kidCounts(1, 1, 1, 1)}, false: {Inserted: 1, Children: kidCounts(1, 0, 1, 0)}}[soft], d)
	wantRows(t, "lines after d came back", childRows(t, b, lines, soft), keep(mark("a|10|1"), "c|20|5", "d|30|7")...)
}
