package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
)

var _ contract.Ledger = (*Store)(nil)

// ledgerBatch is how many claims of a batch share one transaction: one
// fsync for them all, and the write lock is given up between batches so
// other claimers wait at most one batch.
const ledgerBatch = 500

const ledgerCols = `ns, key, status, fingerprint, token, owner, attempt, ttl_ms, expires_at, not_before, result, error, unknown, created_at, updated_at`

// Claim claims each key of reqs, ledgerBatch keys per transaction. Every
// transaction is BEGIN IMMEDIATE (the DSN's _txlock): it takes the write
// lock before it reads, so the read, Decide and the write are one locked
// step, and a claimer waiting for the lock waits up to the busy timeout
// rather than failing busy (docs/ledger.md, "Atomic claims").
func (s *Store) Claim(ctx context.Context, reqs []contract.ClaimRequest) ([]contract.ClaimOutcome, error) {
	out := make([]contract.ClaimOutcome, 0, len(reqs))
	for start := 0; start < len(reqs); start += ledgerBatch {
		chunk := reqs[start:min(start+ledgerBatch, len(reqs))]
		var got []contract.ClaimOutcome
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			got = got[:0]
			now := s.now().UTC()
			// Prepared once for the chunk, not parsed again for every key.
			get, err := tx.PrepareContext(ctx, getEntrySQL)
			if err != nil {
				return err
			}
			defer get.Close()
			put, err := tx.PrepareContext(ctx, putEntrySQL)
			if err != nil {
				return err
			}
			defer put.Close()
			for _, r := range chunk {
				cur, err := scanEntry(get.QueryRowContext(ctx, r.NS, r.Key))
				if errors.Is(err, sql.ErrNoRows) {
					cur, err = nil, nil
				}
				if err != nil {
					return err
				}
				o, next := contract.Decide(cur, r, now)
				if next != nil {
					if _, err := put.ExecContext(ctx, entryArgs(next)...); err != nil {
						return fmt.Errorf("write key: %w", err)
					}
				}
				got = append(got, o)
			}
			return nil
		})
		if err != nil {
			return nil, s.wrap("claim", err)
		}
		out = append(out, got...)
	}
	return out, nil
}

// Complete records the result of the claim holding token.
func (s *Store) Complete(ctx context.Context, ns, key, token, result string) (contract.LedgerEntry, string, error) {
	return s.fenced(ctx, ns, key, "complete", token, result, contract.LedgerFailure{})
}

// Fail records a failed attempt of the claim holding token.
func (s *Store) Fail(ctx context.Context, ns, key, token string, f contract.LedgerFailure) (contract.LedgerEntry, string, error) {
	return s.fenced(ctx, ns, key, "fail", token, "", f)
}

// Heartbeat renews the lease of the claim holding token.
func (s *Store) Heartbeat(ctx context.Context, ns, key, token string) (contract.LedgerEntry, string, error) {
	return s.fenced(ctx, ns, key, "heartbeat", token, "", contract.LedgerFailure{})
}

func (s *Store) fenced(ctx context.Context, ns, key, op, token, result string, f contract.LedgerFailure) (contract.LedgerEntry, string, error) {
	var e contract.LedgerEntry
	var status string
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		cur, err := getEntry(ctx, tx, ns, key)
		if err != nil {
			return err
		}
		var next *contract.LedgerEntry
		status, next = contract.Fenced(cur, op, token, result, f, s.now().UTC())
		switch {
		case next != nil:
			e = *next
			return putEntry(ctx, tx, next)
		case cur != nil:
			e = *cur
		}
		return nil
	})
	if err != nil {
		return e, "", s.wrap(op+" key", err)
	}
	return e, status, nil
}

// Get returns the entry of a key.
func (s *Store) Get(ctx context.Context, ns, key string) (contract.LedgerEntry, bool, error) {
	cur, err := getEntry(ctx, s.db, ns, key)
	if err != nil || cur == nil {
		return contract.LedgerEntry{}, false, s.wrap("read key", err)
	}
	return *cur, true, nil
}

// List returns the entries that match f, oldest update first.
func (s *Store) List(ctx context.Context, f contract.LedgerFilter) ([]contract.LedgerEntry, error) {
	var where []string
	var args []any
	if f.NS != "" {
		where, args = append(where, "ns = ?"), append(args, f.NS)
	}
	if len(f.Statuses) > 0 {
		where = append(where, "status IN (?"+strings.Repeat(", ?", len(f.Statuses)-1)+")")
		for _, st := range f.Statuses {
			args = append(args, st)
		}
	}
	if f.Older > 0 {
		where, args = append(where, "updated_at < ?"), append(args, formatTime(s.now().Add(-f.Older)))
	}
	q := `SELECT ` + ledgerCols + ` FROM ledger`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY updated_at, ns, key"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.wrap("list keys", err)
	}
	defer rows.Close()
	var out []contract.LedgerEntry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, s.wrap("list keys", err)
		}
		out = append(out, *e)
	}
	return out, s.wrap("list keys", rows.Err())
}

// Resolve sets an operator's outcome for a key; ok is false when the key
// has no entry.
func (s *Store) Resolve(ctx context.Context, ns, key string, r contract.LedgerResolution) (contract.LedgerEntry, bool, error) {
	var e contract.LedgerEntry
	var ok bool
	var refused error
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		cur, err := getEntry(ctx, tx, ns, key)
		if err != nil || cur == nil {
			return err
		}
		ok = true
		next, err := contract.Resolved(*cur, r, s.now().UTC())
		if err != nil {
			e, refused = *cur, err
			return nil
		}
		if next == nil {
			e = *cur
			_, err := tx.ExecContext(ctx, `DELETE FROM ledger WHERE ns = ? AND key = ?`, ns, key)
			return err
		}
		e = *next
		return putEntry(ctx, tx, next)
	})
	if err != nil {
		return e, false, s.wrap("resolve key", err)
	}
	return e, ok, refused
}

// GC deletes the completed and failed entries updated more than keep ago.
func (s *Store) GC(ctx context.Context, keep time.Duration) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM ledger WHERE status IN ('completed', 'failed') AND updated_at < ?`,
			formatTime(s.now().Add(-keep)))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, s.wrap("gc keys", err)
}

const getEntrySQL = `SELECT ` + ledgerCols + ` FROM ledger WHERE ns = ? AND key = ?`

func getEntry(ctx context.Context, q queryer, ns, key string) (*contract.LedgerEntry, error) {
	e, err := scanEntry(q.QueryRowContext(ctx, getEntrySQL, ns, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return e, err
}

func scanEntry(row interface{ Scan(...any) error }) (*contract.LedgerEntry, error) {
	var e contract.LedgerEntry
	var ttl int64
	var exp, nb, created, updated sql.NullString
	if err := row.Scan(&e.NS, &e.Key, &e.Status, &e.Fingerprint, &e.Token, &e.Owner, &e.Attempt, &ttl,
		&exp, &nb, &e.Result, &e.Error, &e.Unknown, &created, &updated); err != nil {
		return nil, err
	}
	e.TTL = time.Duration(ttl) * time.Millisecond
	var err error
	for _, p := range []struct {
		v   sql.NullString
		dst *time.Time
	}{{exp, &e.ExpiresAt}, {nb, &e.NotBefore}, {created, &e.CreatedAt}, {updated, &e.UpdatedAt}} {
		if *p.dst, err = parseTime(p.v); err != nil {
			return nil, err
		}
	}
	return &e, nil
}

const putEntrySQL = `INSERT INTO ledger (` + ledgerCols + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (ns, key) DO UPDATE SET status = excluded.status, fingerprint = excluded.fingerprint,
		token = excluded.token, owner = excluded.owner, attempt = excluded.attempt, ttl_ms = excluded.ttl_ms,
		expires_at = excluded.expires_at, not_before = excluded.not_before, result = excluded.result,
		error = excluded.error, unknown = excluded.unknown, updated_at = excluded.updated_at`

func putEntry(ctx context.Context, tx *sql.Tx, e *contract.LedgerEntry) error {
	if _, err := tx.ExecContext(ctx, putEntrySQL, entryArgs(e)...); err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	return nil
}

// entryArgs are putEntrySQL's arguments for e.
func entryArgs(e *contract.LedgerEntry) []any {
	nb := ""
	if !e.NotBefore.IsZero() {
		nb = formatTime(e.NotBefore)
	}
	return []any{e.NS, e.Key, e.Status, e.Fingerprint, e.Token, e.Owner, e.Attempt, e.TTL.Milliseconds(),
		formatTime(e.ExpiresAt), nb, e.Result, e.Error, e.Unknown, formatTime(e.CreatedAt), formatTime(e.UpdatedAt)}
}
