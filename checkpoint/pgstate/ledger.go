package pgstate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/failpoint"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var _ contract.Ledger = (*Store)(nil)

// ledgerBatch is how many claims of a batch share one transaction.
const ledgerBatch = 500

const ledgerCols = `ns, key, status, fingerprint, token, owner, attempt, ttl_ms, expires_at, not_before, result, error, unknown, created_at, updated_at`

// Claim claims each key of reqs, ledgerBatch keys per transaction, each a
// locked read-modify-write judged by the database's clock: a key never
// seen is one INSERT … ON CONFLICT DO NOTHING RETURNING (acquired); an
// existing one is read FOR UPDATE, decided (contract.Decide) and written
// (docs/ledger.md, "Atomic claims"). The keys of a transaction are locked
// in one order, so two batches never deadlock; a deadlock or
// serialization failure all the same runs the transaction again.
//
// One key never seen — n8n's one claim per process — is that INSERT alone,
// a transaction of its own (atomic by itself): one round trip instead of
// BEGIN, INSERT, COMMIT (docs/ledger.md, "Speed"); a key that exists
// takes the locked read-modify-write.
func (s *Store) Claim(ctx context.Context, reqs []contract.ClaimRequest) ([]contract.ClaimOutcome, error) {
	if len(reqs) == 1 {
		o, err := s.insertNew(ctx, s.pool, reqs[0])
		if err == nil {
			return []contract.ClaimOutcome{o}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, s.wrap("claim", fmt.Errorf("claim key: %w", err))
		}
	}
	out := make([]contract.ClaimOutcome, len(reqs))
	for start := 0; start < len(reqs); start += ledgerBatch {
		end := min(start+ledgerBatch, len(reqs))
		order := make([]int, 0, end-start)
		for i := start; i < end; i++ {
			order = append(order, i)
		}
		slices.SortStableFunc(order, func(a, b int) int {
			return cmp.Or(strings.Compare(reqs[a].NS, reqs[b].NS), strings.Compare(reqs[a].Key, reqs[b].Key))
		})
		err := s.retryTx(ctx, func(tx pgx.Tx) error {
			for _, i := range order {
				o, err := s.claimOne(ctx, tx, reqs[i])
				if err != nil {
					return err
				}
				out[i] = o
			}
			return nil
		})
		if err != nil {
			return nil, s.wrap("claim", err)
		}
	}
	return out, nil
}

// ledgerLockWait bounds how long a ledger transaction waits for a row lock
// another transaction holds: a holder's complete paused mid-transaction,
// or its host cut off from the server, which keeps that transaction open
// until TCP gives up (hours). Past it the call fails closed, exit 3 and
// nothing claimed, as on the SQLite state past its busy timeout
// (docs/ledger.md, "Atomic claims"). 10 s (a test build may shorten it,
// failpoint.LockWait).
var ledgerLockWait = failpoint.LockWait(10 * time.Second)

// ledgerTxOptions begin a ledger transaction with its lock waits bounded
// by ledgerLockWait, in BEGIN's own round trip (one simple-protocol
// message).
var ledgerTxOptions = pgx.TxOptions{BeginQuery: fmt.Sprintf("BEGIN; SET LOCAL lock_timeout = %d", ledgerLockWait.Milliseconds())}

// ledgerTx is inTx for the ledger: lock waits bounded (ledgerLockWait).
func (s *Store) ledgerTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.inTxWith(ctx, ledgerTxOptions, fn)
}

// retryTx is ledgerTx, run again (a few times) when PostgreSQL aborted it
// for a deadlock or a serialization failure.
func (s *Store) retryTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	var err error
	for range 5 {
		err = s.ledgerTx(ctx, fn)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != "40P01" && pgErr.Code != "40001") {
			return err
		}
	}
	return err
}

func (s *Store) claimOne(ctx context.Context, tx pgx.Tx, r contract.ClaimRequest) (contract.ClaimOutcome, error) {
	o, err := s.insertNew(ctx, tx, r)
	if err == nil {
		return o, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return contract.ClaimOutcome{}, fmt.Errorf("claim key: %w", err)
	}
	cur, now, err := s.lockEntry(ctx, tx, r.NS, r.Key)
	if err != nil {
		return contract.ClaimOutcome{}, err
	}
	if cur == nil { // deleted (resolve --as forget, gc) since the insert
		return contract.ClaimOutcome{}, &pgconn.PgError{Code: "40001", Message: "key deleted while claimed"}
	}
	o, next := contract.Decide(cur, r, now)
	if next != nil {
		if err := s.putEntry(ctx, tx, next); err != nil {
			return o, err
		}
	}
	return o, nil
}

// insertNew acquires r's key when the ledger has no entry for it, and
// returns pgx.ErrNoRows when it has one.
func (s *Store) insertNew(ctx context.Context, q queryRower, r contract.ClaimRequest) (contract.ClaimOutcome, error) {
	var exp, created time.Time
	err := q.QueryRow(ctx, s.q(`INSERT INTO {S}.ledger (ns, key, status, fingerprint, token, owner, attempt, ttl_ms, expires_at, created_at, updated_at)
		SELECT $1, $2, 'pending', $3, $4, $5, 1, $6::bigint, now + $6::bigint * interval '1 millisecond', now, now
		FROM (SELECT clock_timestamp() AS now) c
		ON CONFLICT (ns, key) DO NOTHING RETURNING expires_at, created_at`),
		r.NS, r.Key, r.Fingerprint, r.Token, r.Owner, r.TTL.Milliseconds()).Scan(&exp, &created)
	if err != nil {
		return contract.ClaimOutcome{}, err
	}
	e := contract.LedgerEntry{NS: r.NS, Key: r.Key, Status: contract.LedgerPending, Fingerprint: r.Fingerprint,
		Token: r.Token, Owner: r.Owner, Attempt: 1, TTL: r.TTL, ExpiresAt: exp.UTC(), CreatedAt: created.UTC(), UpdatedAt: created.UTC()}
	return contract.ClaimOutcome{Status: contract.StatusAcquired, Entry: e}, nil
}

// lockEntry reads a key's entry FOR UPDATE with the database's clock (nil
// when there is none).
func (s *Store) lockEntry(ctx context.Context, tx pgx.Tx, ns, key string) (*contract.LedgerEntry, time.Time, error) {
	var now time.Time
	e, err := scanEntry(tx.QueryRow(ctx, s.q(`SELECT `+ledgerCols+`, clock_timestamp() FROM {S}.ledger WHERE ns = $1 AND key = $2 FOR UPDATE`), ns, key), &now)
	if errors.Is(err, pgx.ErrNoRows) {
		err = tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now)
		return nil, now.UTC(), err
	}
	if err != nil {
		return nil, now, fmt.Errorf("read key: %w", err)
	}
	return e, now.UTC(), nil
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
	err := s.ledgerTx(ctx, func(tx pgx.Tx) error {
		cur, now, err := s.lockEntry(ctx, tx, ns, key)
		if err != nil {
			return err
		}
		var next *contract.LedgerEntry
		status, next = contract.Fenced(cur, op, token, result, f, now)
		switch {
		case next != nil:
			e = *next
			return s.putEntry(ctx, tx, next)
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
	e, err := scanEntry(s.pool.QueryRow(ctx, s.q(`SELECT `+ledgerCols+` FROM {S}.ledger WHERE ns = $1 AND key = $2`), ns, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return contract.LedgerEntry{}, false, nil
	}
	if err != nil {
		return contract.LedgerEntry{}, false, s.wrap("read key", err)
	}
	return *e, true, nil
}

// List returns the entries that match f, oldest update first.
func (s *Store) List(ctx context.Context, f contract.LedgerFilter) ([]contract.LedgerEntry, error) {
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	if f.NS != "" {
		where = append(where, "ns = "+arg(f.NS))
	}
	if len(f.Statuses) > 0 {
		where = append(where, "status = ANY("+arg(f.Statuses)+")")
	}
	if f.Older > 0 {
		where = append(where, "updated_at < clock_timestamp() - "+arg(f.Older.Milliseconds())+"::bigint * interval '1 millisecond'")
	}
	q := `SELECT ` + ledgerCols + ` FROM {S}.ledger`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY updated_at, ns, key"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.pool.Query(ctx, s.q(q), args...)
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
	err := s.ledgerTx(ctx, func(tx pgx.Tx) error {
		cur, now, err := s.lockEntry(ctx, tx, ns, key)
		if err != nil || cur == nil {
			return err
		}
		ok = true
		next, err := contract.Resolved(*cur, r, now)
		if err != nil {
			e, refused = *cur, err
			return nil
		}
		if next == nil {
			e = *cur
			_, err := tx.Exec(ctx, s.q(`DELETE FROM {S}.ledger WHERE ns = $1 AND key = $2`), ns, key)
			return err
		}
		e = *next
		return s.putEntry(ctx, tx, next)
	})
	if err != nil {
		return e, false, s.wrap("resolve key", err)
	}
	return e, ok, refused
}

// GC deletes the completed and failed entries updated more than keep ago.
func (s *Store) GC(ctx context.Context, keep time.Duration) (int64, error) {
	tag, err := s.pool.Exec(ctx, s.q(`DELETE FROM {S}.ledger WHERE status IN ('completed', 'failed')
		AND updated_at < clock_timestamp() - $1::bigint * interval '1 millisecond'`), keep.Milliseconds())
	if err != nil {
		return 0, s.wrap("gc keys", err)
	}
	return tag.RowsAffected(), nil
}

// scanEntry reads an entry's columns and then extra.
func scanEntry(row pgx.Row, extra ...any) (*contract.LedgerEntry, error) {
	var e contract.LedgerEntry
	var ttl int64
	var nb *time.Time
	dst := append([]any{&e.NS, &e.Key, &e.Status, &e.Fingerprint, &e.Token, &e.Owner, &e.Attempt, &ttl,
		&e.ExpiresAt, &nb, &e.Result, &e.Error, &e.Unknown, &e.CreatedAt, &e.UpdatedAt}, extra...)
	if err := row.Scan(dst...); err != nil {
		return nil, err
	}
	e.TTL = time.Duration(ttl) * time.Millisecond
	if nb != nil {
		e.NotBefore = nb.UTC()
	}
	e.ExpiresAt, e.CreatedAt, e.UpdatedAt = e.ExpiresAt.UTC(), e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	return &e, nil
}

func (s *Store) putEntry(ctx context.Context, tx pgx.Tx, e *contract.LedgerEntry) error {
	_, err := tx.Exec(ctx, s.q(`UPDATE {S}.ledger SET status = $3, fingerprint = $4, token = $5, owner = $6,
		attempt = $7, ttl_ms = $8, expires_at = $9, not_before = $10, result = $11, error = $12, unknown = $13,
		updated_at = $14 WHERE ns = $1 AND key = $2`),
		e.NS, e.Key, e.Status, e.Fingerprint, e.Token, e.Owner, e.Attempt, e.TTL.Milliseconds(),
		e.ExpiresAt.UTC(), opt(e.NotBefore), e.Result, e.Error, e.Unknown, e.UpdatedAt.UTC())
	if err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	return nil
}
