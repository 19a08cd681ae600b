package contract

import (
	"context"
	"errors"
	"time"
)

// ErrNotImplemented is what a Sink method returns when its database cannot
// do what the method asks. The engine checks the methods a job needs when
// the target is opened (Probe), before anything is fetched: a database
// that cannot sweep is refused for a job with deletes: soft or hard, one
// that cannot tell whether a table exists for any job.
var ErrNotImplemented = errors.New("not implemented by this database")

// Sink is a target database: one interface with every method the engine
// and the commands call (docs/architecture.md, "What a new database
// or column type touches"). Each method either works or returns an error
// wrapping ErrNotImplemented; sink/sinktest's suite checks every one of
// them.
// Implementations live under sink/ and assert
// `var _ contract.Sink = (*Sink)(nil)`.
type Sink interface {
	// Prepare makes sure the table exists (creating it with its unique key when
	// t.Create is set), that a unique constraint covers t.Key, and that every
	// column of t exists (adding missing ones). It returns an *Error naming the
	// table and, when a unique key is missing, the SQL that would add it.
	Prepare(ctx context.Context, t *Table) error
	// Upsert writes rows in one transaction and commits it before returning:
	// new keys are inserted, changed rows updated, identical rows left alone.
	// Among rows sharing a key the last one wins. With t.Version set, a stored
	// row is only overwritten by a row whose version is >= the stored one.
	// With t.Verify set, a stored row whose mapped columns differ from the
	// row's values counts as changed even when its hash is the same, and a
	// value the column can no longer hold as written fails the page with an
	// *Error naming the table, column and key. A column with Column.Was set
	// whose type in the table is still narrower than Type is widened first,
	// in the same transaction, every stored value kept. A tombstone row
	// deletes its key's row (on a soft table: marks it). Rows the database
	// declined to store although the write succeeded count as Dropped.
	// On error nothing of the page is committed.
	Upsert(ctx context.Context, t *Table, rows []Row) (Counts, error)
	// Close releases the connection.
	Close() error

	TableStater
	Sweeper
	TableOwners
	ParentReader
	RowReader
	RowValidator
	ChangeFeeder
}

// TableStater is the part of a Sink that tells whether its target table
// exists and holds rows. The engine asks before each new or continued run:
// a table that is missing, or empty while the state file holds progress (a
// mark, committed pages), makes the run start from the beginning
// (docs/guarantees.md).
type TableStater interface {
	// TableState reports whether t exists and, when it does, whether it
	// holds no row. It never creates or changes anything. Errors are
	// *Error naming the table.
	TableState(ctx context.Context, t *Table) (exists, empty bool, err error)
}

// Sweeper is the part of a Sink that records the keys of a full pass and
// removes the rows it did not see (docs/deletions.md).
type Sweeper interface {
	// KeyForms returns, for each row, its key in the form the table
	// stores it, encoded as a string Sweep can match against stored rows
	// (equal for keys the table's unique key holds equal). With no rows it
	// returns none and reads nothing: Probe calls it so.
	KeyForms(ctx context.Context, t *Table, rows []Row) ([]string, error)
	// Sweep removes (hard) or marks (soft, keeping an existing mark) in
	// one transaction every live row of t whose key is not among req.Keys
	// nor req.Prior's and that was not written since req.PriorStart
	// (nothing when req.Prior is nil), and counts the other live rows not
	// among req.Keys as pending. It is idempotent: run again after a crash it does the same to the same
	// rows. A sweep over req.MaxRatio that req.Allow does not let pass
	// changes nothing and returns an *Error (Permanent) wrapping
	// ErrSweepRefused that names the numbers; an error of req.Keys changes
	// nothing and is returned wrapped.
	Sweep(ctx context.Context, t *Table, req SweepRequest) (SweepResult, error)
	// LiveRows counts t's live rows (on a soft table, those not marked
	// deleted); 0 when t does not exist. A full pass that sweeps counts
	// them when it starts: max_delete_ratio's base.
	LiveRows(ctx context.Context, t *Table) (int64, error)
}

// TableOwners is the part of a Sink that records the writers of its
// tables in the target database itself (docs/deletions.md, "One writer per
// swept table"). A database without it cannot write a table with deletes:
// soft or hard (refused when the target is opened).
type TableOwners interface {
	// ClaimTable registers c.Writer for t, in one transaction that reads
	// the table's other writers and refuses (CheckWriters) before
	// registering anything. Registering again updates the writer's
	// deletes. Errors are *Error; a refusal wraps ErrSharedTable.
	ClaimTable(ctx context.Context, t *Table, c TableClaim) error
}

// ParentFilter selects the parent rows a child run walks.
type ParentFilter struct {
	// Since, when not zero, keeps the rows whose ColSyncedAt is at or
	// after it.
	Since time.Time
	// From and To, when not nil, bound the key (inclusive): one value per
	// key column, typed as the engine converts them for the column's type.
	From, To []any
	// After, when not nil, keeps the keys above it (exclusive), typed as
	// From: a walk in key order reads on after the last row it read.
	After []any
	// Limit, when above 0, returns at most that many rows (the first by
	// key).
	Limit int
}

// ParentReader is the part of a Sink that reads a parent resource's table
// for a child's fan-out (docs/job-file.md, "Parent → child fan-out").
type ParentReader interface {
	// ParentRows returns, for every row of t that f keeps (never a row
	// marked deleted on a deletes: soft table), the values of
	// cols as text (nil for NULL; integers and decimals in decimal
	// notation, booleans true or false, timestamps in RFC 3339, json as
	// JSON text), ordered by t.Key ascending, the first f.Limit of them
	// when f.Limit is set. A missing table or column fails with an *Error
	// naming it.
	ParentRows(ctx context.Context, t *Table, cols []string, f ParentFilter) ([][]*string, error)
	// MissingParents returns one key of keys (each as KeyForms of t wrote
	// it) that names no row of t, rows marked deleted counting as rows,
	// written "col=value" per key column; "" when every key names a row.
	// A child's sweep is skipped when its parent table lacks a parent the
	// parent's latest full pass listed (docs/deletions.md, "Two passes").
	// A missing table fails with an *Error naming it.
	MissingParents(ctx context.Context, t *Table, keys func(func(string) error) error) (missing string, err error)
}

// RowReader is the part of a Sink that reads a target table back, for
// people looking at what a job wrote (idemsync show).
type RowReader interface {
	// LatestRows returns the names of t's columns in table order (the
	// content hash column left out) and up to limit rows, the most
	// recently written first (by ColSyncedAt, descending). Every value is
	// its column's text form, nil for SQL NULL. A missing table is an
	// *Error (Permanent) naming it.
	LatestRows(ctx context.Context, t *Table, limit int) (columns []string, rows [][]*string, err error)
}

// RowValidator is the part of a Sink that refuses, before the page is
// written, values its database would refuse although the engine accepts
// them (PostgreSQL: a NUL character in text, a key larger than its index
// can hold). The engine checks every mapped record with it, so such a
// record is a bad record like any other (dead-lettered under
// on_bad_record: skip, failing the page with its key, column and reason
// otherwise) instead of a database error that fails the page on every
// run. A database that stores every value returns nil.
type RowValidator interface {
	// CheckRow returns nil when the target can store every value of r, or
	// a *BadRecord naming the column and the reason (Index and Key are
	// filled in by the caller). r may hold fewer values than t has
	// columns (columns inferred later); the missing ones are NULL.
	CheckRow(t *Table, r Row) error
}
