// Package feed reads a job's change feed (docs/changes.md): the events a
// target database's sink recorded, in the rows' own transactions, for
// every row a run inserted, updated or deleted. Consumers are rows beside
// the events; each reads in batches that it acknowledges, and a batch not
// acknowledged within its lease is delivered again (at least once). The
// CLI (idemsync changes) and the HTTP face (idemsync serve) both call
// this package.
package feed

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// Defaults of Options.
const (
	DefaultLimit = 100
	DefaultLease = 5 * time.Minute
	// MaxLimit bounds Options.Limit.
	MaxLimit = 10000
)

// Ops are the operations an event can carry: inserted, updated, deleted.
var Ops = []string{"I", "U", "D"}

// Options select a consumer's next batch.
type Options struct {
	Consumer string
	// Resources and Ops, when not empty, keep only the events of these
	// resources and operations; the others are passed over (acknowledged
	// with the batch) for this consumer.
	Resources []string
	Ops       []string
	Limit     int           // at most this many events; DefaultLimit when 0
	Lease     time.Duration // how long the batch is the consumer's; DefaultLease when 0
	// Now is this host's clock, time.Now when zero. Leases are measured
	// by it only where the database keeps no clock (FeedDB.Clock ""); on
	// PostgreSQL the database's clock measures them, so two hosts reading
	// as one consumer agree on a lease whatever their clocks say.
	Now time.Time
}

// Event is one change of one row.
type Event struct {
	Seq      int64  `json:"seq"`
	Resource string `json:"resource"`
	Key      string `json:"key"`
	Op       string `json:"op"`
	Hash     string `json:"hash,omitempty"`
	Version  string `json:"version,omitempty"`
	Run      int64  `json:"run"`
	At       string `json:"at"`
	// Row is the row's mapped columns (target.changes_rows), on inserts
	// and updates.
	Row json.RawMessage `json:"row,omitempty"`
	// LedgerKey is a key for idemsync key naming this version of the row
	// (LedgerKey).
	LedgerKey string `json:"ledger_key"`
}

// Batch is a consumer's next events.
type Batch struct {
	Job      string `json:"job"`
	Consumer string `json:"consumer"`
	// ID names the batch for Ack; "" when there is nothing to deliver.
	ID           string `json:"batch"`
	LeaseExpires string `json:"lease_expires,omitempty"`
	// After is what the consumer had acknowledged; Through is what
	// acknowledging the whole batch acknowledges (events passed over by
	// the filters included).
	After   int64   `json:"after"`
	Through int64   `json:"through"`
	Events  []Event `json:"events"`
}

// LedgerKey is the ledger key an event suggests (docs/changes.md):
// resource:key:vVERSION when the table has a version column, else
// resource:key:hHASH (the first 16 hex digits of the content hash) for an
// insert or update and resource:key:dHASH for a deletion, so one version
// of a row is acted on once and a new version again.
//
// That text is the key when idemsync key can claim it (contract.CheckKey:
// at most 255 bytes of UTF-8 without NUL) and when it cannot be another
// row's: a version holding ":v", ":h" or ":d" could end another key
// (items:1:v2:v3 is key 1 at version 2:v3 and key 1:v2 at version 3).
// Otherwise it is resource:#DIGEST, the hex SHA-256 of the resource, key,
// tag and version or whole hash, each length-prefixed: one colon, where
// the plain form has at least two, so the two forms never meet; and
// #DIGEST alone when even that would not fit the resource.
func LedgerKey(e Event) string {
	tag := "h"
	if e.Op == "D" {
		tag = "d"
	}
	v, full := e.Hash, e.Hash
	if len(v) > 16 {
		v = v[:16]
	}
	if e.Version != "" && e.Op != "D" {
		tag, v, full = "v", e.Version, e.Version
	}
	k := e.Resource + ":" + e.Key + ":" + tag + v
	if contract.CheckKey("key", k) == nil && !(tag == "v" && endsAnother(v)) {
		return k
	}
	h := sha256.New()
	for _, part := range []string{"idemsync/ledger_key/v1", e.Resource, e.Key, tag, full} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	d := "#" + hex.EncodeToString(h.Sum(nil))
	if len(e.Resource)+1+len(d) > contract.MaxKeyBytes {
		return d
	}
	return e.Resource + ":" + d
}

// endsAnother reports whether a version holds what could end another
// row's plain ledger key: a colon and a tag.
func endsAnother(v string) bool {
	return strings.Contains(v, ":v") || strings.Contains(v, ":h") || strings.Contains(v, ":d")
}

// ErrGap is wrapped by the error of a consumer whose next events were
// pruned before it read them.
var ErrGap = errors.New("gap in the change feed")

// ErrStaleBatch is wrapped by the refusal of an ack for a batch that is
// no longer the consumer's.
var ErrStaleBatch = errors.New("stale batch")

// q rewrites the ? placeholders of query into fd's.
func q(fd contract.FeedDB, query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString(fd.Param(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// consumer is a consumer's row.
type consumer struct {
	acked        int64
	batch        sql.NullString
	batchThrough sql.NullInt64
	leaseUntil   sql.NullInt64
}

// lockConsumer creates the consumer's row when missing and reads it,
// locked for the transaction.
func lockConsumer(ctx context.Context, tx *sql.Tx, fd contract.FeedDB, job, name string) (consumer, error) {
	var c consumer
	if _, err := tx.ExecContext(ctx, q(fd, `INSERT INTO idemsync_change_consumers (job, consumer) VALUES (?, ?) ON CONFLICT (job, consumer) DO NOTHING`), job, name); err != nil {
		return c, err
	}
	err := tx.QueryRowContext(ctx, q(fd, `SELECT acked, batch, batch_through, lease_until FROM idemsync_change_consumers WHERE job = ? AND consumer = ?`+fd.ForUpdate), job, name).
		Scan(&c.acked, &c.batch, &c.batchThrough, &c.leaseUntil)
	return c, err
}

// prunedThrough is how far job's events were pruned (0: never).
func prunedThrough(ctx context.Context, tx *sql.Tx, fd contract.FeedDB, job string) (int64, error) {
	var p int64
	err := tx.QueryRowContext(ctx, q(fd, `SELECT pruned_through FROM idemsync_change_jobs WHERE job = ?`), job).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return p, err
}

// gapError is the refusal to deliver past pruned events.
func gapError(job, name string, acked, pruned int64) error {
	return &contract.Error{Class: contract.Permanent,
		Msg:  fmt.Sprintf("consumer %s of %s: events %d to %d were pruned before it read them", name, job, acked+1, pruned),
		Hint: fmt.Sprintf("to accept the loss and go on from the oldest event kept: idemsync changes reset JOB --consumer %s --to oldest", name),
		Err:  ErrGap}
}

// Next returns the consumer's next batch: the events after its
// acknowledged position that the filters keep, at most o.Limit, leased to
// it for o.Lease. A batch whose lease ran out is replaced (its events
// delivered again, under a new ID); one still leased is refused with a
// Locked error. A consumer is created on first use, at the start of the
// feed. Events the filters pass over are acknowledged at once when the
// batch would otherwise be empty.
func Next(ctx context.Context, fd contract.FeedDB, job string, o Options) (*Batch, error) {
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	tx, err := fd.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, wrap("read the change feed", err)
	}
	defer tx.Rollback()
	c, err := lockConsumer(ctx, tx, fd, job, o.Consumer)
	if err != nil {
		return nil, wrap("read the change feed", err)
	}
	now, err := clock(ctx, tx, fd, o.Now)
	if err != nil {
		return nil, wrap("read the change feed", err)
	}
	if c.batch.Valid && c.leaseUntil.Int64 > now {
		return nil, &contract.Error{Class: contract.Locked,
			Msg:  fmt.Sprintf("consumer %s of %s holds batch %s until %s", o.Consumer, job, c.batch.String, msText(c.leaseUntil.Int64)),
			Hint: "acknowledge it (idemsync changes ack) or wait for its lease to run out: its events are then delivered again",
			Err:  contract.ErrLocked}
	}
	// gap refuses a consumer behind the pruned events; its row is kept,
	// so that status shows it in its gap.
	gap := func() (bool, error) {
		pruned, err := prunedThrough(ctx, tx, fd, job)
		if err != nil {
			return false, wrap("read the change feed", err)
		}
		if c.acked >= pruned {
			return false, nil
		}
		if err := tx.Commit(); err != nil {
			return true, wrap("read the change feed", err)
		}
		return true, gapError(job, o.Consumer, c.acked, pruned)
	}
	if in, err := gap(); in || err != nil {
		return nil, err
	}
	if err := restarted(ctx, tx, fd, job, o.Consumer, c.acked); err != nil {
		return nil, err
	}
	b := &Batch{Job: job, Consumer: o.Consumer, After: c.acked, Through: c.acked, Events: []Event{}}
	keep := filter(o)
	// Events are numbered in commit order, so an event not yet visible
	// gets a number above every visible one: reading on from the last
	// number read never passes one over (docs/changes.md, "Ordering").
	chunk := max(o.Limit, 500)
	var hole error
read:
	for len(b.Events) < o.Limit {
		evs, err := readEvents(ctx, tx, fd, job, b.Through, chunk)
		if err != nil {
			return nil, wrap("read the change feed", err)
		}
		for _, e := range evs {
			if fd.Dense && e.Seq != b.Through+1 {
				// Numbers have no holes: unless a prune that committed
				// meanwhile took them (the check below), these were
				// deleted by hand.
				hole = &contract.Error{Class: contract.Permanent,
					Msg:  fmt.Sprintf("consumer %s of %s: events %d to %d are missing from the feed (deleted, not pruned)", o.Consumer, job, b.Through+1, e.Seq-1),
					Hint: fmt.Sprintf("to accept the loss and go on after them: idemsync changes reset JOB --consumer %s --to %d", o.Consumer, e.Seq-1),
					Err:  ErrGap}
				break read
			}
			if keep(e) {
				b.Events = append(b.Events, e)
			}
			b.Through = e.Seq
			if len(b.Events) == o.Limit {
				break
			}
		}
		if len(evs) < chunk {
			break
		}
	}
	// Again after reading: on PostgreSQL each statement sees what
	// committed before it, so a prune committed between the check above
	// and the events' read deleted events this batch would pass over in
	// silence (a new consumer, which the prune did not see). A prune moves
	// the mark with its deletions: a mark still behind the consumer now
	// means none of them reached past it.
	if in, err := gap(); in || err != nil {
		return nil, err
	}
	if hole != nil {
		return nil, hole
	}
	if len(b.Events) == 0 {
		if b.Through > c.acked { // only passed-over events: nothing to deliver
			if _, err := tx.ExecContext(ctx, q(fd, `UPDATE idemsync_change_consumers SET acked = ?, acked_at = ?, batch = NULL, batch_through = NULL, lease_until = NULL WHERE job = ? AND consumer = ?`),
				b.Through, now, job, o.Consumer); err != nil {
				return nil, wrap("read the change feed", err)
			}
		}
		b.After = b.Through
	} else {
		b.ID = newID()
		until := now + o.Lease.Milliseconds()
		b.LeaseExpires = msText(until)
		if _, err := tx.ExecContext(ctx, q(fd, `UPDATE idemsync_change_consumers SET batch = ?, batch_through = ?, lease_until = ? WHERE job = ? AND consumer = ?`),
			b.ID, b.Through, until, job, o.Consumer); err != nil {
			return nil, wrap("read the change feed", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, wrap("read the change feed", err)
	}
	return b, nil
}

// restarted refuses a consumer past the feed's last number: the feed's
// tables were emptied or recreated and its numbers started again, so
// reading on from the consumer's position would pass over the events
// numbered up to it in silence.
func restarted(ctx context.Context, tx *sql.Tx, fd contract.FeedDB, job, name string, acked int64) error {
	if fd.Last == "" || acked == 0 {
		return nil
	}
	var last int64
	if err := tx.QueryRowContext(ctx, q(fd, fd.Last), job).Scan(&last); err != nil {
		return wrap("read the change feed", err)
	}
	if acked <= last {
		return nil
	}
	return &contract.Error{Class: contract.Permanent,
		Msg:  fmt.Sprintf("consumer %s of %s is at event %d, but the feed's numbers end at %d: its tables were emptied or recreated, and the events numbered up to %d would be passed over", name, job, acked, last, acked),
		Hint: fmt.Sprintf("to read the feed from its oldest event kept: idemsync changes reset JOB --consumer %s --to oldest", name),
		Err:  ErrGap}
}

// clock is the time leases are measured by, in Unix milliseconds: the
// database's (fd.Clock) when it keeps one, else host (time.Now when zero).
func clock(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, fd contract.FeedDB, host time.Time) (int64, error) {
	if fd.Clock != "" {
		var ms int64
		err := db.QueryRowContext(ctx, fd.Clock).Scan(&ms)
		return ms, err
	}
	if host.IsZero() {
		host = time.Now()
	}
	return host.UnixMilli(), nil
}

// filter returns whether o keeps an event.
func filter(o Options) func(Event) bool {
	in := func(list []string, v string) bool {
		if len(list) == 0 {
			return true
		}
		for _, x := range list {
			if x == v {
				return true
			}
		}
		return false
	}
	return func(e Event) bool { return in(o.Resources, e.Resource) && in(o.Ops, e.Op) }
}

// eventsQuery is readEvents' query: n events of a job after a number
// (its placeholders: the job, the number, n).
func eventsQuery(fd contract.FeedDB, n int) string {
	return q(fd, `SELECT seq, resource, key, op, hash, version, run, row, at FROM `+fd.Events+` e ORDER BY seq LIMIT `+strconv.Itoa(n))
}

// readEvents reads up to n of job's events after seq, in order.
func readEvents(ctx context.Context, tx *sql.Tx, fd contract.FeedDB, job string, after int64, n int) ([]Event, error) {
	rows, err := tx.QueryContext(ctx, eventsQuery(fd, n), job, after, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var hash, version, row sql.NullString
		var run sql.NullInt64
		var at int64
		if err := rows.Scan(&e.Seq, &e.Resource, &e.Key, &e.Op, &hash, &version, &run, &row, &at); err != nil {
			return nil, err
		}
		e.Hash, e.Version, e.Run, e.At = hash.String, version.String, run.Int64, msText(at)
		if row.Valid {
			e.Row = json.RawMessage(row.String)
		}
		e.LedgerKey = LedgerKey(e)
		out = append(out, e)
	}
	return out, rows.Err()
}

// AckResult is what an ack did.
type AckResult struct {
	Job      string `json:"job"`
	Consumer string `json:"consumer"`
	Batch    string `json:"batch"`
	Acked    int64  `json:"acked"`
}

// Ack acknowledges the consumer's batch id through seq (the whole batch
// when through is 0): the consumer's next batch starts after it. A batch
// that is no longer the consumer's (acknowledged already, or replaced
// after its lease ran out) is refused with an error wrapping
// ErrStaleBatch; its events are, or were, delivered again. An ack after
// the lease ran out but before another batch replaced it is taken.
func Ack(ctx context.Context, fd contract.FeedDB, job, name, id string, through int64) (*AckResult, error) {
	tx, err := fd.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, wrap("acknowledge", err)
	}
	defer tx.Rollback()
	var c consumer
	err = tx.QueryRowContext(ctx, q(fd, `SELECT acked, batch, batch_through, lease_until FROM idemsync_change_consumers WHERE job = ? AND consumer = ?`+fd.ForUpdate), job, name).
		Scan(&c.acked, &c.batch, &c.batchThrough, &c.leaseUntil)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("%s has no consumer %s", job, name),
			Hint: "a consumer is created by its first idemsync changes"}
	}
	if err != nil {
		return nil, wrap("acknowledge", err)
	}
	if !c.batch.Valid || c.batch.String != id {
		why := "it was acknowledged already"
		if c.batch.Valid {
			why = "its lease ran out and batch " + c.batch.String + " replaced it"
		}
		return nil, &contract.Error{Class: contract.Permanent,
			Msg:  fmt.Sprintf("consumer %s of %s: batch %s is stale: %s (the consumer is at %d)", name, job, id, why, c.acked),
			Hint: "nothing was acknowledged; events of a replaced batch are delivered again in the batch that replaced it",
			Err:  ErrStaleBatch}
	}
	if through == 0 {
		through = c.batchThrough.Int64
	}
	if through <= c.acked || through > c.batchThrough.Int64 {
		return nil, &contract.Error{Class: contract.Invalid,
			Msg: fmt.Sprintf("consumer %s of %s: --through %d is outside batch %s (%d to %d)", name, job, through, id, c.acked+1, c.batchThrough.Int64)}
	}
	if _, err := tx.ExecContext(ctx, q(fd, `UPDATE idemsync_change_consumers SET acked = ?, acked_at = ?, batch = NULL, batch_through = NULL, lease_until = NULL WHERE job = ? AND consumer = ?`),
		through, time.Now().UnixMilli(), job, name); err != nil {
		return nil, wrap("acknowledge", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, wrap("acknowledge", err)
	}
	return &AckResult{Job: job, Consumer: name, Batch: id, Acked: through}, nil
}

// newID returns a fresh batch ID.
func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// msText renders Unix milliseconds as RFC 3339 UTC.
func msText(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// wrap makes a database error a *contract.Error (Transient: a busy file,
// a lost connection), keeping a context's error as it is.
func wrap(op string, err error) error {
	var ce *contract.Error
	if errors.As(err, &ce) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return &contract.Error{Class: contract.Transient, Msg: op, Err: err}
}
