package feed

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// Consumer states in a Report.
const (
	StateOK     = "ok"     // no batch out
	StateLeased = "leased" // a batch out, its lease running
	StateLapsed = "lapsed" // a batch out whose lease ran out: the next read delivers it again
	StateGap    = "gap"    // events it had not read were pruned (docs/changes.md, "Retention and gaps")
)

// ConsumerStatus is one consumer in a Report.
type ConsumerStatus struct {
	Name         string `json:"consumer"`
	State        string `json:"state"`
	Acked        int64  `json:"acked"`
	Pending      int64  `json:"pending"` // events after Acked
	Batch        string `json:"batch,omitempty"`
	BatchThrough int64  `json:"batch_through,omitempty"`
	LeaseExpires string `json:"lease_expires,omitempty"`
}

// Report is a feed's state: its events and its consumers.
type Report struct {
	Job           string           `json:"job"`
	Events        int64            `json:"events"` // kept
	First         int64            `json:"first"`  // lowest kept (0: none)
	Last          int64            `json:"last"`   // highest kept (0: none)
	PrunedThrough int64            `json:"pruned_through"`
	Consumers     []ConsumerStatus `json:"consumers"`
}

// all is the n of contract.FeedDB.Events that asks for every event.
const all = math.MaxInt64

// Status reports job's feed and every consumer's position, leases judged
// as Next judges them: by the database's clock where it keeps one, else
// by now.
func Status(ctx context.Context, fd contract.FeedDB, job string, now time.Time) (*Report, error) {
	r := &Report{Job: job, Consumers: []ConsumerStatus{}}
	nowMs, err := clock(ctx, fd.DB, fd, now)
	if err != nil {
		return nil, wrap("read the change feed", err)
	}
	if err := fd.DB.QueryRowContext(ctx, q(fd, `SELECT COALESCE(max(pruned_through), 0) FROM idemsync_change_jobs WHERE job = ?`), job).Scan(&r.PrunedThrough); err != nil {
		return nil, wrap("read the change feed", err)
	}
	var first, last sql.NullInt64
	if err := fd.DB.QueryRowContext(ctx, q(fd, `SELECT count(*), min(seq), max(seq) FROM `+fd.Events+` e`), job, r.PrunedThrough, all).Scan(&r.Events, &first, &last); err != nil {
		return nil, wrap("read the change feed", err)
	}
	r.First, r.Last = first.Int64, last.Int64
	rows, err := fd.DB.QueryContext(ctx, q(fd, `SELECT consumer, acked, batch, batch_through, lease_until
		FROM idemsync_change_consumers WHERE job = ? ORDER BY consumer`), job)
	if err != nil {
		return nil, wrap("read the change feed", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s ConsumerStatus
		var c consumer
		if err := rows.Scan(&s.Name, &c.acked, &c.batch, &c.batchThrough, &c.leaseUntil); err != nil {
			return nil, wrap("read the change feed", err)
		}
		s.Acked, s.State = c.acked, StateOK
		if c.batch.Valid {
			s.Batch, s.BatchThrough, s.LeaseExpires = c.batch.String, c.batchThrough.Int64, msText(c.leaseUntil.Int64)
			s.State = StateLeased
			if c.leaseUntil.Int64 <= nowMs {
				s.State = StateLapsed
			}
		}
		if c.acked < r.PrunedThrough {
			s.State = StateGap
		}
		r.Consumers = append(r.Consumers, s)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("read the change feed", err)
	}
	rows.Close()
	for i := range r.Consumers {
		c := &r.Consumers[i]
		if err := fd.DB.QueryRowContext(ctx, q(fd, `SELECT count(*) FROM `+fd.Events+` e`), job, max(c.Acked, r.PrunedThrough), all).Scan(&c.Pending); err != nil {
			return nil, wrap("read the change feed", err)
		}
	}
	return r, nil
}

// Reset moves a consumer (created when missing) to after event to:
// "oldest" (the oldest event kept is delivered next), "latest" (only
// events recorded from now on), or a number (0: from the start, a gap
// when events were pruned). Its batch, if any, becomes stale. It returns
// the consumer's new position.
func Reset(ctx context.Context, fd contract.FeedDB, job, name, to string) (int64, error) {
	tx, err := fd.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, wrap("reset", err)
	}
	defer tx.Rollback()
	if _, err := lockConsumer(ctx, tx, fd, job, name); err != nil {
		return 0, wrap("reset", err)
	}
	pruned, err := prunedThrough(ctx, tx, fd, job)
	if err != nil {
		return 0, wrap("reset", err)
	}
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, q(fd, `SELECT max(seq) FROM `+fd.Events+` e`), job, pruned, all).Scan(&last); err != nil {
		return 0, wrap("reset", err)
	}
	latest := max(last.Int64, pruned)
	var at int64
	switch to {
	case "oldest":
		at = pruned
	case "latest":
		at = latest
	default:
		if at, err = strconv.ParseInt(to, 10, 64); err != nil || at < 0 {
			return 0, &contract.Error{Class: contract.Invalid, Msg: fmt.Sprintf("--to %q: want oldest, latest or an event number", to)}
		}
		// Past the last event, the consumer would pass over the events
		// recorded next, up to that number, in silence (a typo: 1000
		// for 100).
		if at > latest {
			return 0, &contract.Error{Class: contract.Invalid,
				Msg:  fmt.Sprintf("--to %d: the feed's last event is %d; a consumer there would pass over the next %d events recorded", at, latest, at-latest),
				Hint: "--to latest skips to the events recorded from now on"}
		}
	}
	if _, err := tx.ExecContext(ctx, q(fd, `UPDATE idemsync_change_consumers SET acked = ?, acked_at = ?, batch = NULL, batch_through = NULL, lease_until = NULL WHERE job = ? AND consumer = ?`),
		at, time.Now().UnixMilli(), job, name); err != nil {
		return 0, wrap("reset", err)
	}
	return at, wrapNil("reset", tx.Commit())
}

// Pruned is what Prune did: the events it deleted and how far the feed
// is pruned now (the highest number deleted, ever).
type Pruned struct {
	Job           string `json:"job"`
	Deleted       int64  `json:"events_deleted"`
	PrunedThrough int64  `json:"pruned_through"`
}

// Prune deletes job's events that every consumer has acknowledged and
// that were recorded before before, and records how far it went: a
// consumer behind that point (created later, or reset below it) is in a
// gap. With no consumer, every event recorded before before goes.
func Prune(ctx context.Context, fd contract.FeedDB, job string, before time.Time) (Pruned, error) {
	p := Pruned{Job: job}
	tx, err := fd.DB.BeginTx(ctx, nil)
	if err != nil {
		return p, wrap("prune the change feed", err)
	}
	defer tx.Rollback()
	// The job's row is locked first, so a concurrent prune waits.
	if _, err := tx.ExecContext(ctx, q(fd, `INSERT INTO idemsync_change_jobs (job) VALUES (?) ON CONFLICT (job) DO NOTHING`), job); err != nil {
		return p, wrap("prune the change feed", err)
	}
	if err := tx.QueryRowContext(ctx, q(fd, `SELECT pruned_through FROM idemsync_change_jobs WHERE job = ?`+fd.ForUpdate), job).Scan(&p.PrunedThrough); err != nil {
		return p, wrap("prune the change feed", err)
	}
	var old, acked sql.NullInt64
	if err := tx.QueryRowContext(ctx, q(fd, fd.RecordedBefore), job, before.UnixMilli()).Scan(&old); err != nil {
		return p, wrap("prune the change feed", err)
	}
	if err := tx.QueryRowContext(ctx, q(fd, `SELECT min(acked) FROM idemsync_change_consumers WHERE job = ?`), job).Scan(&acked); err != nil {
		return p, wrap("prune the change feed", err)
	}
	bound := old.Int64
	if acked.Valid {
		bound = min(bound, acked.Int64)
	}
	if bound <= p.PrunedThrough {
		return p, nil
	}
	var n int64
	if err := tx.QueryRowContext(ctx, q(fd, `SELECT count(*) FROM `+fd.Events+` e WHERE seq <= ?`), job, p.PrunedThrough, bound-p.PrunedThrough, bound).Scan(&n); err != nil {
		return p, wrap("prune the change feed", err)
	}
	if _, err := tx.ExecContext(ctx, q(fd, fd.Delete), job, bound); err != nil {
		return p, wrap("prune the change feed", err)
	}
	if _, err := tx.ExecContext(ctx, q(fd, `UPDATE idemsync_change_jobs SET pruned_through = ? WHERE job = ?`), bound, job); err != nil {
		return p, wrap("prune the change feed", err)
	}
	if err := tx.Commit(); err != nil {
		return Pruned{Job: job}, wrap("prune the change feed", err)
	}
	p.Deleted, p.PrunedThrough = n, bound
	return p, nil
}

// wrapNil is wrap for an error that may be nil.
func wrapNil(op string, err error) error {
	if err == nil {
		return nil
	}
	return wrap(op, err)
}
