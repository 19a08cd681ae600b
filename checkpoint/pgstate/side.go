package pgstate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5"
)

// Cycle returns when the open cycle name began, and whether one is open.
func (s *Store) Cycle(ctx context.Context, name string) (time.Time, bool, error) {
	var at time.Time
	err := s.pool.QueryRow(ctx, s.q(`SELECT started_at FROM {S}.job_cycles WHERE name = $1`), name).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, s.wrap("read cycle of "+name, err)
	}
	return at.UTC(), true, nil
}

// OpenCycle records that a cycle of name began at t, replacing any open one.
func (s *Store) OpenCycle(ctx context.Context, name string, t time.Time) error {
	_, err := s.pool.Exec(ctx, s.q(`INSERT INTO {S}.job_cycles (name, started_at) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET started_at = excluded.started_at`), name, t.UTC())
	return s.wrap("open cycle of "+name, err)
}

// CloseCycle forgets the open cycle of name.
func (s *Store) CloseCycle(ctx context.Context, name string) error {
	_, err := s.pool.Exec(ctx, s.q(`DELETE FROM {S}.job_cycles WHERE name = $1`), name)
	return s.wrap("close cycle of "+name, err)
}

// metricsKey is the (job, resource) a state job name's counters are kept
// under, as in the SQLite store.
func metricsKey(job string) (string, string) {
	if file, resource, ok := strings.Cut(job, "."); ok {
		return file, resource
	}
	return job, job
}

// addCountersSQL adds to the job's metrics counters (counterArgs).
const addCountersSQL = `INSERT INTO {S}.metrics_totals AS m (job, resource, pages, inserted, updated, unchanged, skipped, deleted)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	ON CONFLICT (job, resource) DO UPDATE SET
		pages = m.pages + excluded.pages, inserted = m.inserted + excluded.inserted,
		updated = m.updated + excluded.updated, unchanged = m.unchanged + excluded.unchanged,
		skipped = m.skipped + excluded.skipped, deleted = m.deleted + excluded.deleted`

func counterArgs(job string, pages, inserted, updated, unchanged, deleted, skipped int64) []any {
	file, resource := metricsKey(job)
	return []any{file, resource, pages, inserted, updated, unchanged, skipped, deleted}
}

// addCounters adds a page's (or sweep's) figures to the counters of job
// in the transaction that commits them.
func (s *Store) addCounters(ctx context.Context, tx pgx.Tx, job string, pages, inserted, updated, unchanged, deleted, skipped int64) error {
	if _, err := tx.Exec(ctx, s.q(addCountersSQL), counterArgs(job, pages, inserted, updated, unchanged, deleted, skipped)...); err != nil {
		return fmt.Errorf("count metrics: %w", err)
	}
	return nil
}

// AddRunMetrics records how a command on job and resource ended and
// returns the totals.
func (s *Store) AddRunMetrics(ctx context.Context, job, resource string, m contract.RunMetrics) (contract.MetricsTotals, error) {
	t := contract.MetricsTotals{Job: job, Resource: resource}
	if err := checkJob(job); err != nil {
		return t, s.wrap("record metrics", err)
	}
	var success *time.Time
	if m.Success {
		success = opt(m.At)
	}
	_, err := s.pool.Exec(ctx, s.q(`INSERT INTO {S}.metrics_totals AS t (job, resource, last_run_at, last_success_at, last_duration_ms, last_exit_code, sweeps_skipped)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (job, resource) DO UPDATE SET
			last_run_at = excluded.last_run_at,
			last_success_at = coalesce(excluded.last_success_at, t.last_success_at),
			last_duration_ms = excluded.last_duration_ms, last_exit_code = excluded.last_exit_code,
			sweeps_skipped = t.sweeps_skipped + excluded.sweeps_skipped`),
		job, resource, m.At.UTC(), success, m.Duration.Milliseconds(), m.ExitCode, m.SweepsSkipped)
	if err != nil {
		return t, s.wrap("job "+job+": record metrics", err)
	}
	return s.Metrics(ctx, job, resource)
}

// Metrics returns the totals of job and resource.
func (s *Store) Metrics(ctx context.Context, job, resource string) (contract.MetricsTotals, error) {
	t := contract.MetricsTotals{Job: job, Resource: resource}
	var last, success *time.Time
	var ms int64
	err := s.pool.QueryRow(ctx, s.q(`SELECT pages, inserted, updated, unchanged, skipped, deleted,
			last_run_at, last_success_at, last_duration_ms, last_exit_code, sweeps_skipped
		FROM {S}.metrics_totals WHERE job = $1 AND resource = $2`), job, resource).Scan(
		&t.Pages, &t.Inserted, &t.Updated, &t.Unchanged, &t.Skipped, &t.Deleted, &last, &success, &ms, &t.LastExitCode, &t.SweepsSkipped)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, nil
	}
	if err != nil {
		return t, s.wrap("job "+job+": read metrics", err)
	}
	t.LastDuration = time.Duration(ms) * time.Millisecond
	t.LastRun, t.LastSuccess = utc(last), utc(success)
	state := job // the job's name in runs: NAME, or NAME.RESOURCE
	if resource != job {
		state = job + "." + resource
	}
	err = s.pool.QueryRow(ctx, s.q(`SELECT coalesce((SELECT pending_deletes FROM {S}.runs WHERE job = $1 AND swept ORDER BY id DESC LIMIT 1), 0)`),
		state).Scan(&t.PendingDeletes)
	if err != nil {
		return t, s.wrap("job "+job+": read metrics", err)
	}
	return t, nil
}

// legacyCredential marks a refresh token stored before tokens were kept
// per credential; a PostgreSQL state never has one, but a state moved
// from a SQLite file may.
const legacyCredential = "legacy"

// underJob matches the rows of job and of its resources.
const underJob = `(job = $3 OR left(job, length($3) + 1) = $3 || '.')`

// LoadRefreshToken returns the stored token of credential ("" when none),
// adopting a legacy token of the same seed as the SQLite store does.
func (s *Store) LoadRefreshToken(ctx context.Context, job, credential, seedHash string) (token string, pending bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, s.q(`SELECT token, pending FROM {S}.auth_credentials WHERE job = $1 AND credential = $2`), job, credential).Scan(&token, &pending)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		err = tx.QueryRow(ctx, s.q(`SELECT token, pending FROM {S}.auth_credentials
			WHERE credential = $1 AND seed_hash = $2 AND `+underJob+`
			ORDER BY pending, updated_at DESC LIMIT 1`), legacyCredential, seedHash, job).Scan(&token, &pending)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q(`INSERT INTO {S}.auth_credentials (job, credential, seed_hash, token, pending, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6)`), job, credential, seedHash, token, pending, s.now().UTC()); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, s.q(`DELETE FROM {S}.auth_credentials WHERE credential = $1 AND seed_hash = $2 AND `+underJob),
			legacyCredential, seedHash, job)
		return err
	})
	if err != nil {
		return "", false, s.wrap("read auth token", err)
	}
	return token, pending, nil
}

// SaveRefreshToken stores credential's token; it is durable when it
// returns (the commit of a PostgreSQL transaction is).
func (s *Store) SaveRefreshToken(ctx context.Context, job, credential, seedHash, token string, pending bool) error {
	_, err := s.pool.Exec(ctx, s.q(`INSERT INTO {S}.auth_credentials (job, credential, seed_hash, token, pending, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (job, credential) DO UPDATE SET seed_hash = excluded.seed_hash, token = excluded.token,
			pending = excluded.pending, updated_at = excluded.updated_at`),
		job, credential, seedHash, token, pending, s.now().UTC())
	return s.wrap("store auth token", err)
}

// DropRefreshTokens removes the tokens of job whose credential is not in
// keep (legacy ones whose seed is not in seeds) and returns how many.
func (s *Store) DropRefreshTokens(ctx context.Context, job string, keep, seeds []string) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, s.q(`SELECT job, credential, seed_hash FROM {S}.auth_credentials
			WHERE job = $1 OR left(job, length($1) + 1) = $1 || '.'`), job)
		if err != nil {
			return err
		}
		var drop [][2]string
		for rows.Next() {
			var j, c, seed string
			if err := rows.Scan(&j, &c, &seed); err != nil {
				rows.Close()
				return err
			}
			if slices.Contains(keep, c) || c == legacyCredential && slices.Contains(seeds, seed) {
				continue
			}
			drop = append(drop, [2]string{j, c})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, d := range drop {
			if _, err := tx.Exec(ctx, s.q(`DELETE FROM {S}.auth_credentials WHERE job = $1 AND credential = $2`), d[0], d[1]); err != nil {
				return fmt.Errorf("drop auth token: %w", err)
			}
		}
		n = len(drop)
		return nil
	})
	if err != nil {
		return 0, s.wrap("drop auth tokens", err)
	}
	return n, nil
}
