package pgstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var _ contract.FencedStore = (*Store)(nil)

// Fencing returns the key and token that fence job's writes in a target
// (docs/guarantees.md, "Fenced targets"): the state's identity and the
// job, and the token of the lease this Store holds on job.
func (s *Store) Fencing(job string) (string, int64, bool) {
	s.mu.Lock()
	l := s.leases[job]
	s.mu.Unlock()
	if l == nil || s.id == "" {
		return "", 0, false
	}
	return s.id + "/" + job, l.token, true
}

// CommitPageIn records p in tx, the page's target transaction in this
// state's own database (docs/guarantees.md, "One transaction per page"):
// the lease is renewed on condition of its token and the checkpoint
// written there, so rows, checkpoint and lease check commit together.
func (s *Store) CommitPageIn(ctx context.Context, ptx contract.PageTx, job string, p *contract.PageCommit) error {
	op := "job " + job + ": commit page with its rows"
	tx, ok := ptx.Tx().(pgx.Tx)
	if !ok || p == nil {
		return s.wrap(op, errors.New("not a PostgreSQL transaction, or no page"))
	}
	b, seq, err := s.pageBatch(job, p)
	if err != nil {
		return s.wrap(op, err)
	}
	if err := s.sendPage(ctx, tx, job, p, b); err != nil {
		return s.wrap(op, err)
	}
	s.log.Debug("page checkpointed in the rows' transaction", "job", job, "run_id", p.RunID, "seq", *seq)
	return nil
}

// CommittedIn moves the trusted time of job's leases on from since: the
// transaction CommitPageIn renewed them in, begun after since, committed.
func (s *Store) CommittedIn(job string, since time.Time) { s.renewed(job, since) }

// PageCommitted reports whether p is the last page committed to its run,
// as its checkpoint and position say: read after a commit whose answer was
// lost, on a connection of its own.
func (s *Store) PageCommitted(ctx context.Context, p *contract.PageCommit) (bool, error) {
	var ckpt, pos, hash string
	err := s.pool.QueryRow(ctx, s.q(`SELECT r.checkpoint, p.position, p.hash FROM {S}.runs r
		JOIN {S}.pages p ON p.run_id = r.id WHERE r.id = $1 ORDER BY p.seq DESC LIMIT 1`), p.RunID).Scan(&ckpt, &pos, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, s.wrap(fmt.Sprintf("run %d: read the last checkpoint back", p.RunID), err)
	}
	return ckpt == p.Next && pos == p.Position && hash == p.Hash, nil
}

// readIdentity reads the state's identity (migration 0003).
func (s *Store) readIdentity(ctx context.Context) error {
	err := s.pool.QueryRow(ctx, s.q(`SELECT id FROM {S}.identity LIMIT 1`)).Scan(&s.id)
	if errors.Is(err, pgx.ErrNoRows) {
		return errors.New("the state's identity row is missing")
	}
	return err
}

// SameDatabase reports whether the state at state (a postgres:// URL) and
// the target at target live in one database of one server: host, port and
// database name equal (docs/guarantees.md, "One transaction per page").
func SameDatabase(state, target string) bool {
	if !IsURL(state) || !IsURL(target) {
		return false
	}
	connURL, _, _, err := config(state)
	if err != nil {
		return false
	}
	a, err1 := pgconn.ParseConfig(connURL)
	b, err2 := pgconn.ParseConfig(target)
	if err1 != nil || err2 != nil {
		return false
	}
	return a.Host == b.Host && a.Port == b.Port && a.Database == b.Database
}
