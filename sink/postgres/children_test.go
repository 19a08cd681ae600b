package postgres_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
)

// deleteLog records, by a statement trigger on each child table of tbl,
// every DELETE the sink runs on them (even one deleting nothing), and
// returns a function reading the tables deleted from, in order.
func deleteLog(t *testing.T, b *sinktest.DB, tbl *contract.Table) func() []string {
	t.Helper()
	logT := sinktest.QName(&contract.Table{Schema: b.Schema, Name: "deletes_seen"})
	fn := sinktest.QName(&contract.Table{Schema: b.Schema, Name: "note_delete"})
	b.Exec(t, "CREATE TABLE "+logT+" (n bigserial, tbl text)")
	b.Exec(t, "CREATE FUNCTION "+fn+"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO "+logT+" (tbl) VALUES (TG_TABLE_NAME); RETURN NULL; END $$")
	for _, d := range tbl.Descendants() {
		b.Exec(t, fmt.Sprintf("CREATE TRIGGER note_delete BEFORE DELETE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %s()", sinktest.QName(&d.Table), fn))
	}
	return func() []string {
		var out []string
		for _, r := range b.Rows(t, "SELECT tbl FROM "+logT+" ORDER BY n") {
			out = append(out, fmt.Sprint(r[0]))
		}
		return out
	}
}

// A first load into child tables holding only rows this sink inserted
// sends no DELETE for the children of parents the table does not hold:
// they can have none (docs/job-file.md, "Child tables"). A parent listed
// again with other elements still has its vanished elements deleted.
func TestFirstLoadDeletesNoChildren(t *testing.T) {
	b := newPostgresBackend(t)
	s, _ := copySink(t)
	tbl := sinktest.ChildTable(b, "")
	sinktest.MustPrepare(t, s, tbl)
	deletes := deleteLog(t, b, tbl)
	counts := func(in, del int64) map[string]contract.ChildCounts {
		var n contract.Counts
		n.AddChild("people_lines", in, del)
		n.AddChild("people_line_notes", 0, 0)
		return n.Children
	}
	a := sinktest.Person("a", map[int64]int64{10: 1, 11: 2})
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Children: counts(3, 0)}, a, sinktest.Person("c", map[int64]int64{20: 5}))
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1, Children: counts(1, 0)}, sinktest.Person("d", map[int64]int64{30: 1}))
	if got := deletes(); len(got) != 0 {
		t.Fatalf("a first load of new parents deleted from child tables: %q", got)
	}

	// a again, its line 10 gone and 12 new, with a new parent.
	a2 := sinktest.Person("a", map[int64]int64{11: 2, 12: 4})
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1, Updated: 1, Children: counts(3, 2)}, a2, sinktest.Person("e", map[int64]int64{40: 1}))
	if got := strings.Join(deletes(), ","); !strings.Contains(got, "people_lines") {
		t.Fatalf("the children of a parent listed again were not deleted: deletes %q", got)
	}
	var lines []string
	for _, r := range b.Rows(t, "SELECT people_id || '|' || lid || '|' || qty FROM "+sinktest.QName(&tbl.Children[0].Table)+" ORDER BY 1") {
		lines = append(lines, fmt.Sprint(r[0]))
	}
	if got, want := strings.Join(lines, " "), "a|11|2 a|12|4 c|20|5 d|30|1 e|40|1"; got != want {
		t.Fatalf("lines = %s, want %s", got, want)
	}
}
