package contract

import (
	"context"
	"database/sql"
)

// Changes is target.changes of a job: the sink records, in the target
// database and in the same transaction as the rows, one event per row a
// write inserted, updated or deleted (docs/changes.md). nil on a table
// without a feed.
type Changes struct {
	// Job names the feed: the job file's name (one feed per job file,
	// every resource of the file in it).
	Job string
	// Resource is the resource whose rows the table holds, stamped on
	// each event.
	Resource string
	// Run is the run whose writes the events belong to; the engine sets
	// it once the run is known, before the first page is written.
	Run int64
	// Rows makes each inserted or updated row's event carry the row's
	// mapped columns as a JSON object (target.changes_rows).
	Rows bool
}

// FeedDB is the database holding a target's change feed, for the
// package that reads it (package feed): a database/sql handle and the
// little its SQL writes differently.
type FeedDB struct {
	DB *sql.DB
	// Param is the placeholder of the n-th argument, from 1: "?" or "$n".
	Param func(n int) string
	// ForUpdate is appended to a SELECT that reads a row the transaction
	// then updates (" FOR UPDATE" on PostgreSQL; "" on SQLite, whose
	// write transactions lock the whole file when they begin).
	ForUpdate string
	// Events is a FROM item of one job's events numbered above a given
	// number, the lowest n of them at least (all when there are fewer),
	// in no order, with the columns seq, resource, key, op, hash, version,
	// run, row and at; its three placeholders are the job, the number and
	// n. (PostgreSQL keeps up to 1,000 of a statement's events in one row
	// and expands here only the n asked for: docs/changes.md, "Cost".)
	Events string
	// RecordedBefore selects the highest number of a job's events
	// recorded before a time (placeholders: the job, Unix milliseconds);
	// NULL when there is none.
	RecordedBefore string
	// Delete deletes a job's events numbered up to a number
	// (placeholders: the job, the number). Events it leaves in place
	// below that number (PostgreSQL: in a row holding later ones too)
	// are never read again: readers start above the pruned number.
	Delete string
	// Clock, when not "", selects the database's time in Unix
	// milliseconds: consumers' leases are measured by it, so hosts whose
	// clocks disagree agree on them (PostgreSQL). "" measures them by the
	// reading process's clock (SQLite: a feed in one host's file).
	Clock string
	// Last selects the highest number the job's feed has handed out
	// (placeholder: the job; SQLite: of the file's feeds, which share
	// one numbering), 0 when none: a consumer past it finds the feed's
	// numbers started again, its tables emptied or recreated by hand.
	Last string
	// Dense is whether a job's numbers have no holes (PostgreSQL: one
	// counter per job), so an event missing between two is a gap.
	Dense bool
}

// ChangeFeeder is the part of a Sink that keeps a change feed
// (docs/changes.md). Prepare installs the feed on a table whose
// Table.Changes is set (and removes it from one whose Changes is nil);
// from then on every write of the table records its events in the same
// transaction, numbered in commit order.
type ChangeFeeder interface {
	// FeedDB creates the feed's tables when missing and returns the
	// database holding the feed of t's table (PostgreSQL: in t's schema,
	// the search_path's first when t.Schema is ""), its unqualified names
	// resolving to the feed's tables. The handle stays the sink's: Close
	// closes it.
	FeedDB(ctx context.Context, t *Table) (FeedDB, error)
}
