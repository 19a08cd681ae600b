package sinktest

import (
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// changesRunOfEveryWriter checks the run stamped on events
// (docs/changes.md): every event written after a Prepare of the job's
// feed carries that Prepare's run, whoever wrote the row (the sink or
// another tool) and whichever of the job's tables it is in, and the
// events recorded before keep the run they were recorded with.
func changesRunOfEveryWriter(t *testing.T, b *DB) {
	job, suffix := "feed_"+RandomHex(4), RandomHex(3)
	s := b.Sink(t)
	a := b.Table("fed_run_a_"+suffix, []string{"id"}, Col("id", contract.TypeText), Col("note", contract.TypeText))
	c := b.Table("fed_run_b_"+suffix, []string{"id"}, Col("id", contract.TypeText), Col("note", contract.TypeText))
	a.Changes = &contract.Changes{Job: job, Resource: "a", Run: 1}
	c.Changes = &contract.Changes{Job: job, Resource: "b", Run: 2}
	other := func(tbl *contract.Table, id string) {
		b.Exec(t, "INSERT INTO "+QName(tbl)+` (id, note, "`+contract.ColHash+`") VALUES ('`+id+`', 'by another tool', 'h-`+id+`')`)
	}
	var last int64
	runs := func(step string, want ...int64) {
		t.Helper()
		got := readFeed(t, s, a, job, last)
		if len(got) != len(want) {
			t.Fatalf("%s: events %v, want %d", step, got, len(want))
		}
		for i, e := range got {
			if e.run != want[i] {
				t.Errorf("%s: event %v (%s) has run %d, want %d", step, e, e.resource, e.run, want[i])
			}
		}
		if len(got) > 0 {
			last = got[len(got)-1].seq
		}
	}

	MustPrepare(t, s, a)
	MustUpsert(t, s, a, contract.Counts{Inserted: 1}, Row("x", "X"))
	other(a, "o1")
	runs("run 1: the sink's row and another tool's", 1, 1)

	// Another resource of the job prepares its table: the job's last run
	// is 2, on every table of the feed.
	MustPrepare(t, s, c)
	other(a, "o2")
	MustUpsert(t, s, c, contract.Counts{Inserted: 1}, Row("y", "Y"))
	runs("run 2 of the other resource: another tool's row in the first table and the sink's in the second", 2, 2)

	a.Changes.Run = 3
	MustPrepare(t, s, a)
	other(c, "o3")
	MustUpsert(t, s, a, contract.Counts{Updated: 1}, Row("x", "X3"))
	runs("run 3", 3, 3)

	last = 0
	runs("every event again, each with the run it was recorded with", 1, 1, 2, 2, 3, 3)
}
