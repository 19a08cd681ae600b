package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// RunMetrics is what one command (run, resume or replay) adds to a job's
// metrics: the pages and records it committed itself (not those of the
// earlier attempts of a run it continued), when it ended, how long it took,
// its exit code, and whether it succeeded (exit 0).
type RunMetrics struct {
	Pages, Inserted, Updated, Unchanged, Skipped, Deleted int64
	// SweepsSkipped counts the full passes that ended with their sweep
	// skipped (0 or 1).
	SweepsSkipped int64
	At            time.Time
	Duration      time.Duration
	ExitCode      int
	Success       bool
}

// MetricsTotals are a job's metrics as --metrics-file reports them:
// counters summed over the job's life, and the latest run's figures.
// LastSuccess is the zero time when no run has succeeded yet.
type MetricsTotals struct {
	Job, Resource                                         string
	Pages, Inserted, Updated, Unchanged, Skipped, Deleted int64
	SweepsSkipped                                         int64
	LastRun, LastSuccess                                  time.Time
	LastDuration                                          time.Duration
	LastExitCode                                          int
}

// AddRunMetrics adds one command's figures to the totals of job and
// resource (for a single-resource job, the job's name) and returns the new
// totals, in one transaction. A failure (Success false) leaves the last
// success time as it was. prune never removes these rows. Errors are
// *idsync.Error (exit 1, or 3 when the file is busy).
func (s *Store) AddRunMetrics(ctx context.Context, job, resource string, m RunMetrics) (MetricsTotals, error) {
	t := MetricsTotals{Job: job, Resource: resource}
	if err := checkJob(job); err != nil {
		return t, s.wrap("record metrics", err)
	}
	var success sql.NullString
	if m.Success {
		success = sql.NullString{String: formatTime(m.At), Valid: true}
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO metrics_totals (job, resource, pages, inserted, updated, unchanged, skipped, deleted,
				last_run_at, last_success_at, last_duration_ms, last_exit_code, sweeps_skipped)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
			ON CONFLICT (job, resource) DO UPDATE SET
				pages = pages + excluded.pages, inserted = inserted + excluded.inserted,
				updated = updated + excluded.updated, unchanged = unchanged + excluded.unchanged,
				skipped = skipped + excluded.skipped, deleted = deleted + excluded.deleted,
				sweeps_skipped = sweeps_skipped + excluded.sweeps_skipped,
				last_run_at = excluded.last_run_at,
				last_success_at = coalesce(excluded.last_success_at, last_success_at),
				last_duration_ms = excluded.last_duration_ms, last_exit_code = excluded.last_exit_code`,
			job, resource, m.Pages, m.Inserted, m.Updated, m.Unchanged, m.Skipped, m.Deleted,
			formatTime(m.At), success, m.Duration.Milliseconds(), m.ExitCode, m.SweepsSkipped)
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
// recorded run has zero totals and zero times. Errors are *idsync.Error.
func (s *Store) Metrics(ctx context.Context, job, resource string) (MetricsTotals, error) {
	t := MetricsTotals{Job: job, Resource: resource}
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
	if t.LastRun, err = parseTime(last); err != nil {
		return t, s.wrap("job "+job+": read metrics", err)
	}
	if t.LastSuccess, err = parseTime(success); err != nil {
		return t, s.wrap("job "+job+": read metrics", err)
	}
	return t, nil
}
