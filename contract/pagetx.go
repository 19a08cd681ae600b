package contract

import (
	"context"
	"time"
)

// PageTx is a page's target transaction while it is still open: what a
// state store may add to it before it commits (docs/guarantees.md, "One
// transaction per page", "Fenced targets").
type PageTx interface {
	// Fence records token as the highest fencing token of key in the
	// target, and refuses (an *Error of class Locked wrapping ErrLocked)
	// when the target holds a higher one: a holder whose lease another
	// process took over cannot commit rows.
	Fence(ctx context.Context, key string, token int64) error
	// Tx is the database's own transaction (a pgx.Tx on PostgreSQL), for
	// a state store in the same database to join.
	Tx() any
}

// TxSink is a Sink whose page write lets more work into its transaction.
type TxSink interface {
	// UpsertIn is Upsert calling before, with the page's counts, in the
	// page's transaction just before it commits; an error from before
	// rolls the page back and is returned.
	UpsertIn(ctx context.Context, t *Table, rows []Row, before func(ctx context.Context, tx PageTx, n Counts) error) (Counts, error)
}

// FencedStore is a state store whose run lock is a lease with a fencing
// token, and which can commit a page's checkpoint in the page's target
// transaction when it lives in the same database.
type FencedStore interface {
	// Fencing returns the key and token that fence job's writes in a
	// target (the key names the state and the job); ok is false when
	// the store holds no lease on job.
	Fencing(job string) (key string, token int64, ok bool)
	// Holds refuses (exit 4) when a lease the store holds on job was
	// lost or is past the time it can trust it: the engine asks before
	// every write to the target, which a SQLite target cannot fence.
	Holds(job string) error
	// CommitPageIn is CommitPage inside tx, a transaction of the store's
	// own database: the checkpoint commits with the page's rows or not
	// at all.
	CommitPageIn(ctx context.Context, tx PageTx, job string, p *PageCommit) error
	// PageCommitted reports whether p is the last page committed to its
	// run: how a commit whose answer was lost is decided.
	PageCommitted(ctx context.Context, p *PageCommit) (bool, error)
	// CommittedIn tells the store that a transaction CommitPageIn joined
	// for job, begun after since, committed: the lease renewal in it
	// counts from since (docs/operations.md, "Leases").
	CommittedIn(job string, since time.Time)
}
