package sinktest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// changeCases check the change feed (docs/changes.md): one event per row
// a write inserted, updated or deleted, none for an unchanged row, in the
// write's own transaction, numbered in commit order.
func changeCases() []testCase {
	return []testCase{
		{"changes hard", func(t *testing.T, b *DB) { changesOps(t, b, contract.DeletesHard) }},
		{"changes soft", func(t *testing.T, b *DB) { changesOps(t, b, contract.DeletesSoft) }},
		{"changes rows and off", changesRowsAndOff},
		{"changes run of every writer", changesRunOfEveryWriter},
	}
}

// feedEvent is one event as the suite reads it back.
type feedEvent struct {
	seq           int64
	op, key, hash string
	run           int64
	row           map[string]any
	resource, ver string
}

// String is op:key, the form the cases compare.
func (e feedEvent) String() string { return e.op + ":" + e.key }

// readFeed returns job's events after seq, in seq order, through the
// sink's FeedDB.
func readFeed(t *testing.T, s contract.Sink, tbl *contract.Table, job string, after int64) []feedEvent {
	t.Helper()
	fd, err := s.FeedDB(context.Background(), tbl)
	if err != nil || fd.DB == nil {
		t.Fatalf("FeedDB: %v (database %v)", err, fd.DB)
	}
	q := `SELECT seq, op, key, COALESCE(hash, ''), COALESCE(run, 0), COALESCE(row, ''), resource, COALESCE(version, '')
		FROM ` + fd.Events + ` e ORDER BY seq`
	parts := strings.Split(q, "?")
	q = parts[0]
	for i, p := range parts[1:] {
		q += fd.Param(i+1) + p
	}
	rows, err := fd.DB.Query(q, job, after, math.MaxInt64)
	if err != nil {
		t.Fatalf("read the feed: %v", err)
	}
	defer rows.Close()
	var out []feedEvent
	for rows.Next() {
		var e feedEvent
		var row string
		if err := rows.Scan(&e.seq, &e.op, &e.key, &e.hash, &e.run, &row, &e.resource, &e.ver); err != nil {
			t.Fatal(err)
		}
		if row != "" {
			if err := json.Unmarshal([]byte(row), &e.row); err != nil {
				t.Fatalf("event %d: row %q is not a JSON object: %v", e.seq, row, err)
			}
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(out); i++ {
		if out[i].seq <= out[i-1].seq {
			t.Fatalf("events out of order: %d after %d", out[i].seq, out[i-1].seq)
		}
	}
	return out
}

// expectEvents reads the events after *last, checks them (op:key, in
// order) against want, and moves *last past them.
func expectEvents(t *testing.T, s contract.Sink, tbl *contract.Table, job string, last *int64, step string, want ...string) []feedEvent {
	t.Helper()
	got := readFeed(t, s, tbl, job, *last)
	var ops []string
	for _, e := range got {
		ops = append(ops, e.String())
	}
	if strings.Join(ops, " ") != strings.Join(want, " ") {
		t.Fatalf("%s: events %v, want %v", step, ops, want)
	}
	if len(got) > 0 {
		*last = got[len(got)-1].seq
	}
	return got
}

// changesOps writes a fed People table through every path that changes
// rows (insert, update, unchanged, tombstone, sweep) and checks the
// events each leaves.
func changesOps(t *testing.T, b *DB, mode string) {
	job := "feed_" + RandomHex(4)
	s, tbl := b.Sink(t), People(b)
	tbl.Deletes = mode
	tbl.Changes = &contract.Changes{Job: job, Resource: "people", Run: 7}
	MustPrepare(t, s, tbl)
	var last int64
	rows := []contract.Row{Row("a", "A", int64(1)), Row("b", "B", int64(1)), Row("c", "C", int64(1)), Row("d", "D", int64(1))}
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 4}, rows...)
	got := expectEvents(t, s, tbl, job, &last, "first write", "I:a", "I:b", "I:c", "I:d")
	for i, e := range got {
		if e.run != 7 || e.resource != "people" || e.hash != rows[i].Hash || e.row != nil {
			t.Errorf("event %v: run %d resource %q hash %q row %v, want run 7, people, %q, no row", e, e.run, e.resource, e.hash, e.row, rows[i].Hash)
		}
	}
	MustUpsert(t, s, tbl, contract.Counts{Unchanged: 4}, rows...)
	expectEvents(t, s, tbl, job, &last, "unchanged write")
	tbl.Changes.Run = 8
	MustPrepare(t, s, tbl)
	MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 1}, Row("b", "B2", int64(2)), rows[0])
	got = expectEvents(t, s, tbl, job, &last, "update", "U:b")
	if got[0].run != 8 {
		t.Errorf("update event's run %d, want 8 (the run Prepare stamped)", got[0].run)
	}
	tomb := rows[2]
	tomb.Tombstone = true
	MustUpsert(t, s, tbl, contract.Counts{Deleted: 1}, tomb)
	expectEvents(t, s, tbl, job, &last, "tombstone", "D:c")
	MustUpsert(t, s, tbl, contract.Counts{Unchanged: 1}, tomb)
	expectEvents(t, s, tbl, job, &last, "tombstone again")
	if res := mustSweep(t, s, tbl, sweepReq(t, s, tbl, mode, "a", "b")); res.Deleted != 1 {
		t.Fatalf("sweep deleted %d, want 1 (d)", res.Deleted)
	}
	expectEvents(t, s, tbl, job, &last, "sweep", "D:d")
	mustSweep(t, s, tbl, sweepReq(t, s, tbl, mode, "a", "b"))
	expectEvents(t, s, tbl, job, &last, "sweep again")
	// A key that comes back: inserted again (hard) or its mark cleared (soft).
	back, n := "I:c", contract.Counts{Inserted: 1}
	if mode == contract.DeletesSoft {
		back, n = "U:c", contract.Counts{Updated: 1}
	}
	MustUpsert(t, s, tbl, n, rows[2])
	expectEvents(t, s, tbl, job, &last, "key back", back)
}

// changesRowsAndOff checks Changes.Rows (the event carries the row's
// mapped columns) on a two-column key, and that a table prepared without
// Changes records nothing more.
func changesRowsAndOff(t *testing.T, b *DB) {
	job := "feed_" + RandomHex(4)
	s := b.Sink(t)
	tbl := b.Table("fed_pairs", []string{"org", "id"}, Col("org", contract.TypeText), Col("id", contract.TypeInteger), Col("note", contract.TypeText))
	tbl.Changes = &contract.Changes{Job: job, Resource: "pairs", Run: 1, Rows: true}
	MustPrepare(t, s, tbl)
	var last int64
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, Row("x", int64(5), "hello"))
	got := expectEvents(t, s, tbl, job, &last, "insert", `I:["x",5]`)
	if e := got[0]; e.row["org"] != "x" || e.row["note"] != "hello" || fmt.Sprint(e.row["id"]) != "5" || len(e.row) != 3 {
		t.Errorf("event row %v, want org x, id 5, note hello and nothing else", e.row)
	}
	tbl.Changes = nil
	MustPrepare(t, s, tbl)
	MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Inserted: 1}, Row("x", int64(5), "bye"), Row("y", int64(1), "new"))
	expectEvents(t, s, tbl, job, &last, "feed off")
}
