package contract

import (
	"fmt"
	"strings"
	"time"
)

// Bookkeeping column names. Every target table carries them next to the
// mapped columns.
const (
	ColHash     = "_idemsync_hash"      // text: content hash of the mapped values
	ColSyncedAt = "_idemsync_synced_at" // timestamp: when the row was last written
)

// Column is one mapped column of the target table.
type Column struct {
	Name string     // column name in the table
	Path string     // GJSON path of the value in each record
	Type ColumnType // column type
	// Parent, in a child resource (docs/job-file.md, "Parent → child fan-out"), is the parent table's column
	// whose value the column takes; Path is then unused.
	Parent string
	// Was, for an inferred column widened since it was first inferred, is
	// the type it had first ("" otherwise). A sink whose column still has
	// a narrower type widens it in the page's own write transaction; the
	// content hash of a value of type Was is the one it had before
	// (docs/job-file.md, "Without columns").
	Was ColumnType
}

// Table describes the target table a job writes to.
type Table struct {
	Schema  string   // optional schema (Postgres); "" means the default
	Name    string   // table name
	Key     []string // columns that identify a record; a unique key covers them
	Columns []Column // mapped columns, key columns included
	Version string   // optional column guarding against stale writes; "" when unset
	Create  bool     // create the table and its unique key when missing
	// Verify makes Upsert compare every stored mapped column, in the form
	// the database stores it, with the value it would write, besides the
	// content hash: a row changed outside idemsync (its hash left as it
	// was) is rewritten and counted as Updated. False (the default)
	// compares the hash only. The engine sets it for run --verify.
	Verify bool
	// Deletes is target.deletes (keep, soft or hard; "" is keep). With
	// soft the table has ColDeletedAt, and a write of a marked row's key
	// clears its mark.
	Deletes string
	// Changes, when set, keeps the table's change feed (target.changes,
	// docs/changes.md).
	Changes *Changes
	// FeedJob is the name of the feed the table's job keeps or would
	// keep (its job file's name), set with or without Changes: Prepare of
	// a table without Changes removes the feed's triggers only when they
	// record into this feed, so a job sharing another's table (deletes:
	// keep) leaves that job's feed in place (docs/changes.md). "" removes
	// any.
	FeedJob string
	// Children are the child tables filled from the records' nested
	// arrays (target.children, docs/job-file.md "Child tables"). A sink
	// writes, deletes and marks a row's child rows in the row's own
	// transaction.
	Children []Child
	// Progress, when its Value is set, is the progress marker an Upsert
	// writes in the page's transaction (a Progressor's; the engine sets
	// it for each page).
	Progress Progress
	// Now, when set, is the run's clock: the time a write stamps
	// ColSyncedAt (and a tombstone's ColDeletedAt) with. The engine sets
	// it to the job's time line (docs/deletions.md, "One time line per
	// job"); nil is time.Now.
	Now func() time.Time
}

// Clock returns t.Now(), or time.Now() when t.Now is nil.
func (t *Table) Clock() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Soft reports whether the table marks deleted rows (deletes: soft)
// instead of deleting them.
func (t *Table) Soft() bool { return t.Deletes == DeletesSoft }

// String returns the table name as the user wrote it (schema.table or table).
func (t *Table) String() string {
	if t.Schema != "" {
		return t.Schema + "." + t.Name
	}
	return t.Name
}

// Column returns the column named name, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// Row is one record converted to the table's columns.
type Row struct {
	Values []any  // aligned with Table.Columns; nil is SQL NULL
	Hash   string // content hash of Values, stored in ColHash
	// Tombstone: the record was flagged deleted (target.tombstone); the
	// row with its key is deleted or, on a soft table, marked, instead of
	// written.
	Tombstone bool
	// Children holds, aligned with Table.Children, the rows of each child
	// table that this row's record holds: its whole set, which replaces
	// the stored one when the row is written. The row's Hash covers them.
	Children [][]Row
}

// Counts tallies what an upsert did. Inserted+Updated+Unchanged+Dropped+Deleted
// equals the number of rows handed to Upsert: a row superseded by a later
// row with the same key in the same page counts as unchanged, and so does a
// tombstone whose row was already gone (or marked).
type Counts struct {
	Inserted  int64
	Updated   int64
	Unchanged int64
	// Dropped counts rows the database declined to store although the
	// write succeeded (a trigger returning NULL): the engine reports them
	// as skipped, with a warning. Sinks that cannot tell leave it 0.
	Dropped int64
	// Deleted counts the rows tombstones deleted or newly marked.
	Deleted int64
	// Children counts the rows of each child table written, deleted or
	// marked, by the child table's name (children.go); nil when none.
	Children map[string]ChildCounts
}

// Wrote reports whether the rows counted changed the target: a row
// inserted, updated, deleted or marked, in the table or a child table. A
// page that wrote nothing raises no progress marker (docs/guarantees.md,
// "Progress markers").
func (c Counts) Wrote() bool {
	if c.Inserted+c.Updated+c.Deleted > 0 {
		return true
	}
	for _, cc := range c.Children {
		if cc != (ChildCounts{}) {
			return true
		}
	}
	return false
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Inserted += o.Inserted
	c.Updated += o.Updated
	c.Unchanged += o.Unchanged
	c.Dropped += o.Dropped
	c.Deleted += o.Deleted
	for name, cc := range o.Children {
		c.AddChild(name, cc.Inserted, cc.Deleted)
	}
}

// KeyString returns a string identifying a row's key, for deduplication.
func KeyString(t *Table, r Row) string {
	var b strings.Builder
	for _, k := range t.Key {
		for i, c := range t.Columns {
			if c.Name == k {
				fmt.Fprintf(&b, "%T:%v\x00", r.Values[i], r.Values[i])
			}
		}
	}
	return b.String()
}

// Dedupe returns the rows of a page with only the last occurrence of each key
// kept, in the order of those last occurrences, and how many were dropped.
func Dedupe(t *Table, rows []Row) ([]Row, int) {
	last := make(map[string]int, len(rows))
	for i, r := range rows {
		last[KeyString(t, r)] = i
	}
	if len(last) == len(rows) {
		return rows, 0
	}
	out := make([]Row, 0, len(last))
	for i, r := range rows {
		if last[KeyString(t, r)] == i {
			out = append(out, r)
		}
	}
	return out, len(rows) - len(out)
}
