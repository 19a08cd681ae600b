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

// metricsKey is the (job, resource) a state job name's counters are kept
// under: "shop.orders" is resource orders of job file shop; a
// single-resource job is its own resource.
func metricsKey(job string) (string, string) {
	if file, resource, ok := strings.Cut(job, "."); ok {
		return file, resource
	}
	return job, job
}

// addCounters adds one committed page's (or sweep's) figures to the
// counters of job in tx, the transaction that commits them, so that every
// run counts whether or not it writes a metrics file (docs/operations.md,
// Metrics). A row first created here has no last run yet ("").
func addCounters(ctx context.Context, tx execer, job string, pages, inserted, updated, unchanged, deleted, skipped int64) error {
	file, resource := metricsKey(job)
	_, err := tx.ExecContext(ctx, addCountersSQL, file, resource, pages, inserted, updated, unchanged, skipped, deleted)
	if err != nil {
		return fmt.Errorf("count metrics: %w", err)
	}
	return nil
}

// addCountersSQL adds to the job's metrics counters (addCounters).
const addCountersSQL = `INSERT INTO metrics_totals (job, resource, pages, inserted, updated, unchanged, skipped, deleted, last_run_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, '')
		ON CONFLICT (job, resource) DO UPDATE SET
			pages = pages + excluded.pages, inserted = inserted + excluded.inserted,
			updated = updated + excluded.updated, unchanged = unchanged + excluded.unchanged,
			skipped = skipped + excluded.skipped, deleted = deleted + excluded.deleted`

// AddRunMetrics records how a command on job and resource (for a
// single-resource job, the job's name) ended and returns the job's totals,
// in one transaction. A failure (Success false) leaves the last success
// time as it was. prune never removes these rows. Errors are
// *contract.Error (exit 1, or 3 when the file is busy).
func (s *Store) AddRunMetrics(ctx context.Context, job, resource string, m contract.RunMetrics) (contract.MetricsTotals, error) {
	t := contract.MetricsTotals{Job: job, Resource: resource}
	if err := checkJob(job); err != nil {
		return t, s.wrap("record metrics", err)
	}
	var success sql.NullString
	if m.Success {
		success = sql.NullString{String: formatTime(m.At), Valid: true}
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO metrics_totals (job, resource, last_run_at, last_success_at, last_duration_ms, last_exit_code, sweeps_skipped)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
			ON CONFLICT (job, resource) DO UPDATE SET
				last_run_at = excluded.last_run_at,
				last_success_at = coalesce(excluded.last_success_at, last_success_at),
				last_duration_ms = excluded.last_duration_ms, last_exit_code = excluded.last_exit_code,
				sweeps_skipped = sweeps_skipped + excluded.sweeps_skipped`,
			job, resource, formatTime(m.At), success, m.Duration.Milliseconds(), m.ExitCode, m.SweepsSkipped)
		if err != nil {
			return fmt.Errorf("add: %w", err)
		}
		return nil
	})
	if err != nil {
		return t, s.wrap("job "+job+": record metrics", err)
	}
	return s.Metrics(ctx, job, resource)
}

// Metrics returns the metrics totals of job and resource; a job with no
// recorded run has zero totals and zero times. Errors are *contract.Error.
func (s *Store) Metrics(ctx context.Context, job, resource string) (contract.MetricsTotals, error) {
	t := contract.MetricsTotals{Job: job, Resource: resource}
	var last, success sql.NullString
	var ms int64
	err := s.db.QueryRowContext(ctx, `SELECT pages, inserted, updated, unchanged, skipped, deleted,
			last_run_at, last_success_at, last_duration_ms, last_exit_code, sweeps_skipped
		FROM metrics_totals WHERE job = ? AND resource = ?`, job, resource).Scan(
		&t.Pages, &t.Inserted, &t.Updated, &t.Unchanged, &t.Skipped, &t.Deleted, &last, &success, &ms, &t.LastExitCode, &t.SweepsSkipped)
	if errors.Is(err, sql.ErrNoRows) {
		return t, nil
	}
	if err != nil {
		return t, s.wrap("job "+job+": read metrics", err)
	}
	t.LastDuration = time.Duration(ms) * time.Millisecond
	state := job // the job's name in runs: NAME, or NAME.RESOURCE (metricsKey)
	if resource != job {
		state = job + "." + resource
	}
	err = s.db.QueryRowContext(ctx, `SELECT coalesce((SELECT pending_deletes FROM runs WHERE job = ? AND swept = 1 ORDER BY id DESC LIMIT 1), 0)`,
		state).Scan(&t.PendingDeletes)
	if err != nil {
		return t, s.wrap("job "+job+": read metrics", err)
	}
	if t.LastRun, err = parseTime(last); err != nil {
		return t, s.wrap("job "+job+": read metrics", err)
	}
	if t.LastSuccess, err = parseTime(success); err != nil {
		return t, s.wrap("job "+job+": read metrics", err)
	}
	return t, nil
}
