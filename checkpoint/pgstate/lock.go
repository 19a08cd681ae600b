package pgstate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// lease is a run lock this Store holds (docs/operations.md, "Leases"): the
// row {S}.leases of job, acquired with token. trusted is the local time
// until which the lease cannot have expired in the database: the moment a
// renewal was sent plus the lease, less a margin. Past it, without a
// renewal, the Store stops writing for the job (lost).
type lease struct {
	job   string
	token int64
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	trusted time.Time
	lost    bool
}

// margin is the part of the lease a holder does not trust: the clocks of
// host and database may run at slightly different rates, and a page's
// transaction takes time.
func margin(d time.Duration) time.Duration { return d / 5 }

// firstTokenSQL is the token of a lease row inserted for a job: the
// database's clock in milliseconds since 1970, never 1. A job's row is
// inserted once, and its token then grows by one per acquisition, so it
// stays below the clock of any later moment (it would need more than one
// acquisition per millisecond, on average, since the row was made). A
// row deleted by hand is therefore re-created with a token above every
// token an earlier holder had: no earlier holder's renewal or page matches
// it, and a fenced target holding an earlier token accepts the new holder
// (docs/operations.md, "Leases"). Rows inserted before this rule, from 1,
// are far below it.
const firstTokenSQL = `greatest(1, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)`

// Lock acquires the job's lease without waiting: it succeeds when no row
// exists (the token starts at firstTokenSQL), or the row's lease has
// expired by the database's clock (a released lease has), and increments
// the token. A takeover that waited
// for the holder's page transaction (its fence locks the row) is stamped
// when it happens, after that wait, not with the VALUES computed before
// it: the lease runs a whole lease from then, and its acquired_at is
// never before the previous lease's end. While another holder's
// lease runs, it fails with exit 4 naming the holder and when the lease
// expires. A heartbeat renews the lease every third of its length until
// unlock or Close, which release it.
func (s *Store) Lock(ctx context.Context, job string) (unlock func(), err error) {
	op := "job " + job + ": lock"
	if err := checkJob(job); err != nil {
		return nil, s.wrap(op, err)
	}
	holder := fmt.Sprintf("pid %d on %s since %s", os.Getpid(), hostname(), s.now().UTC().Format(time.RFC3339))
	sent := time.Now()
	var token int64
	err = s.pool.QueryRow(ctx, s.q(`
		INSERT INTO {S}.leases AS l (job, token, holder, acquired_at, expires_at)
		VALUES ($1, `+firstTokenSQL+`, $2, clock_timestamp(), clock_timestamp() + $3 * interval '1 millisecond')
		ON CONFLICT (job) DO UPDATE SET token = l.token + 1, holder = excluded.holder,
			acquired_at = clock_timestamp(), expires_at = clock_timestamp() + $3 * interval '1 millisecond'
		WHERE l.expires_at <= clock_timestamp()
		RETURNING token`), job, holder, s.lease.Milliseconds()).Scan(&token)
	// A lock_timeout set on the role (or the database) ends the wait for
	// the holder's page transaction, which locks the row, with 55P03: the
	// job is locked as surely as when the wait ends with the row unexpired.
	if errors.Is(err, pgx.ErrNoRows) || lockNotAvailable(err) {
		who, until, _ := s.holder(ctx, job)
		msg := fmt.Sprintf("job %s is locked by %s (lease until %s)", job, who, until.UTC().Format(time.RFC3339))
		if who == "" {
			msg = fmt.Sprintf("job %s is locked by another process (its transaction holds the job's lease row)", job)
		}
		return nil, &contract.Error{
			Class: contract.Locked,
			Msg:   msg,
			Hint:  "wait for that run to finish; a holder that died loses the lease when it expires",
			Err:   contract.ErrLocked,
		}
	}
	if err != nil {
		return nil, s.wrap(op, err)
	}
	// The schema was checked when opened; a run that waited for the lease
	// may find it migrated since by a newer idemsync, which may have
	// written this job's state in a form this build would misread.
	if err := s.notNewerNow(ctx); err != nil {
		s.giveBack(job, token)
		return nil, s.wrap(op, err)
	}
	l := &lease{job: job, token: token, stop: make(chan struct{}), done: make(chan struct{}),
		trusted: sent.Add(s.lease - margin(s.lease))}
	s.mu.Lock()
	s.leases[job] = l
	s.mu.Unlock()
	go s.heartbeat(l)
	s.log.Debug("job lease taken", "job", job, "token", token, "lease", s.lease)
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			mine := s.leases[job] == l
			if mine {
				delete(s.leases, job)
			}
			s.mu.Unlock()
			if mine {
				s.release(l)
			}
		})
	}, nil
}

// heartbeat renews l every third of the lease until it is released. A
// renewal that finds the token changed, or no renewal before the trusted
// time ends, loses the lease: the Store writes nothing more for the job.
func (s *Store) heartbeat(l *lease) {
	defer close(l.done)
	tick := time.NewTicker(s.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		if s.paused.Load() {
			continue
		}
		ctx, cancel := context.WithDeadline(context.Background(), l.trustedUntil())
		err := s.renew(ctx, l)
		cancel()
		switch {
		case errors.Is(err, errLeaseLost):
			s.log.Warn("job lease lost: another host took the job over; this run stops writing", "job", l.job)
			return
		case err != nil && time.Now().After(l.trustedUntil()):
			l.markLost()
			s.log.Warn("job lease could not be renewed before it could expire; this run stops writing", "job", l.job, "err", err)
			return
		case err != nil:
			s.log.Debug("job lease renewal failed; retrying", "job", l.job, "err", err)
		}
	}
}

func (l *lease) trustedUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.trusted
}

func (l *lease) markLost() {
	l.mu.Lock()
	l.lost = true
	l.mu.Unlock()
}

// errLeaseLost is the renewal's finding that the token changed.
var errLeaseLost = errors.New("lease lost")

// renewSQL extends the lease of job $1 by $3 ms from the database's now,
// on condition that its token is still $2.
const renewSQL = `UPDATE {S}.leases SET expires_at = clock_timestamp() + $3 * interval '1 millisecond'
	WHERE job = $1 AND token = $2`

// renew extends l by a lease from the database's now, on condition that
// its token is unchanged, and moves the trusted time on; a changed token
// marks it lost.
func (s *Store) renew(ctx context.Context, l *lease) error {
	sent := time.Now()
	tag, err := s.pool.Exec(ctx, s.q(renewSQL), l.job, l.token, s.lease.Milliseconds())
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		l.markLost()
		return errLeaseLost
	}
	l.mu.Lock()
	if t := sent.Add(s.lease - margin(s.lease)); t.After(l.trusted) {
		l.trusted = t
	}
	l.mu.Unlock()
	return nil
}

// fence renews, in the transaction tx, the leases this Store holds on job
// and on the job file it belongs to ("shop" for "shop.orders"), so that
// the transaction commits only while they are still this Store's: the
// renewal locks the lease's row until the commit, and a token another
// holder incremented matches no row. A lease lost (by the heartbeat's
// finding or its trusted time running out) refuses at once, exit 4.
func (s *Store) fence(ctx context.Context, tx pgx.Tx, job string) error {
	b := &pgx.Batch{}
	if err := s.queueFence(b, job); err != nil {
		return err
	}
	return tx.SendBatch(ctx, b).Close()
}

// queueFence is fence's renewals queued in b, the first statements of a
// batch the caller sends in its transaction (a page's: one round trip,
// docs/performance.md "State in PostgreSQL"). A renewal that matches no
// row fails (guarded), which aborts the transaction.
func (s *Store) queueFence(b *pgx.Batch, job string) error {
	ls := s.jobLeases(job)
	for _, l := range ls {
		if l.untrusted() {
			return leaseLost(l)
		}
		b.Queue(s.q(guarded(renewSQL)), l.job, l.token, s.lease.Milliseconds()).Fn = func(br pgx.BatchResults) error {
			_, err := br.Exec()
			switch {
			case refused(err):
				l.markLost()
				return leaseLost(l)
			case err != nil:
				return fmt.Errorf("renew the lease of %s: %w", l.job, err)
			}
			return nil
		}
	}
	return nil
}

// jobLeases are the leases this Store holds that fence job's writes: the
// job's and its job file's ("shop" for "shop.orders").
func (s *Store) jobLeases(job string) []*lease {
	file, _, _ := strings.Cut(job, ".")
	s.mu.Lock()
	defer s.mu.Unlock()
	var ls []*lease
	for _, name := range []string{job, file} {
		if l := s.leases[name]; l != nil && (len(ls) == 0 || ls[0] != l) {
			ls = append(ls, l)
		}
	}
	return ls
}

// untrusted reports whether l was lost or its trusted time has passed.
func (l *lease) untrusted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost || time.Now().After(l.trusted)
}

// Holds refuses to write for job, exit 4, once a lease fencing it was lost
// or its trusted time passed (docs/operations.md, "Leases"): asked before
// each write to the target, so that a holder paused past its lease, whose
// page arrives after another host took the job over, writes no row of it,
// to a target no token fences (a SQLite file) included.
func (s *Store) Holds(job string) error {
	for _, l := range s.jobLeases(job) {
		if l.untrusted() {
			return leaseLost(l)
		}
	}
	return nil
}

// renewed moves on the trusted time of the leases fence renewed for job
// (the job's and its job file's) in a transaction that has committed, its
// statements sent at sent: the database extended them by a lease from a
// moment after sent, as a heartbeat's renewal does (renew). A run whose
// heartbeat is starved (a loaded host) goes on while its pages commit.
func (s *Store) renewed(job string, sent time.Time) {
	file, _, _ := strings.Cut(job, ".")
	s.mu.Lock()
	ls := []*lease{s.leases[job], s.leases[file]}
	s.mu.Unlock()
	for _, l := range ls {
		if l == nil {
			continue
		}
		l.mu.Lock()
		if t := sent.Add(s.lease - margin(s.lease)); !l.lost && t.After(l.trusted) {
			l.trusted = t
		}
		l.mu.Unlock()
	}
}

// leaseLost is the refusal to write for a job whose lease l was lost:
// exit 4, as when another run holds the job, but without contract.ErrLocked,
// whose text says another run is in progress; this holder does not know
// that (it may only have been paused, docs/fault-tolerance.md).
func leaseLost(l *lease) error {
	return &contract.Error{
		Class: contract.Locked,
		Msg:   fmt.Sprintf("the lease on job %s (token %d) was lost; this process stops without writing", l.job, l.token),
		Hint:  "the lease was not renewed in time (a paused or partitioned process?) and another process may have taken the job over; it continues the run",
	}
}

// release ends l's heartbeat and expires its lease now, if its token is
// still the job's. The row stays, so that the token only grows.
func (s *Store) release(l *lease) {
	close(l.stop)
	<-l.done
	s.giveBack(l.job, l.token)
}

// giveBack ends the lease of job under token now, when it still holds.
func (s *Store) giveBack(job string, token int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.pool.Exec(ctx, s.q(`UPDATE {S}.leases SET expires_at = clock_timestamp(), holder = ''
		WHERE job = $1 AND token = $2 AND expires_at > clock_timestamp()`), job, token)
	if err != nil {
		s.log.Warn("release job lease (it expires by itself)", "job", job, "err", err)
		return
	}
	s.log.Debug("job lease released", "job", job, "token", token)
}

// holder returns who holds the job's lease and until when, or "" when its
// lease has expired or nobody ever took it.
func (s *Store) holder(ctx context.Context, job string) (string, time.Time, error) {
	var who string
	var until time.Time
	err := s.pool.QueryRow(ctx, s.q(`SELECT holder, expires_at FROM {S}.leases WHERE job = $1 AND expires_at > clock_timestamp()`), job).Scan(&who, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, err
	}
	if who == "" {
		who = "another process"
	}
	return who, until, nil
}

// lockNotAvailable reports whether err is a lock_timeout's end of a wait
// for a row lock (SQLSTATE 55P03).
func lockNotAvailable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// hostname names this host in the holder text.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown host"
	}
	return strings.TrimSpace(h)
}
