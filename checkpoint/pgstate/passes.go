package pgstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// CompletePass completes the full pass runID at its end, as the SQLite
// store does, fenced by the job's lease.
func (s *Store) CompletePass(ctx context.Context, runID int64, deleted int64) error {
	now := s.now().UTC()
	err := s.inRunTx(ctx, runID, func(tx pgx.Tx) error {
		var job string
		var full bool
		var started time.Time
		err := tx.QueryRow(ctx, s.q(`
			UPDATE {S}.runs SET status = 'completed', finished_at = $1, deleted = deleted + $2
			WHERE id = $3 AND status = 'running' AND owner = $4 RETURNING job, full_pass, started_at`),
			now, deleted, runID, s.token).Scan(&job, &full, &started)
		if errors.Is(err, pgx.ErrNoRows) {
			return s.notFinishable(ctx, tx, runID)
		}
		if err != nil {
			return fmt.Errorf("complete run: %w", err)
		}
		if err := s.addCounters(ctx, tx, job, 0, 0, 0, 0, deleted, 0); err != nil {
			return err
		}
		if !full {
			return nil
		}
		return s.recordFullPass(ctx, tx, job, started, now)
	})
	return s.wrap(fmt.Sprintf("complete run %d", runID), err)
}

// RefusePass ends the full pass runID for good with status refused and
// makes the job's next run a full pass.
func (s *Store) RefusePass(ctx context.Context, runID int64, errMsg string) error {
	now := s.now().UTC()
	err := s.inRunTx(ctx, runID, func(tx pgx.Tx) error {
		var job string
		err := tx.QueryRow(ctx, s.q(`
			UPDATE {S}.runs SET status = 'refused', error = $1, finished_at = $2
			WHERE id = $3 AND status = 'running' AND owner = $4 RETURNING job`),
			clean(errMsg), now, runID, s.token).Scan(&job)
		if errors.Is(err, pgx.ErrNoRows) {
			return s.notFinishable(ctx, tx, runID)
		}
		if err != nil {
			return fmt.Errorf("refuse run: %w", err)
		}
		if _, err := tx.Exec(ctx, s.q(`UPDATE {S}.jobs SET full_due = true, updated_at = $1 WHERE name = $2`), now, job); err != nil {
			return fmt.Errorf("save pending full pass: %w", err)
		}
		return nil
	})
	return s.wrap(fmt.Sprintf("refuse run %d", runID), err)
}

// SkipSweep records reason as why the full pass runID cannot prove
// absence; the first reason stored stays.
func (s *Store) SkipSweep(ctx context.Context, runID int64, reason string) error {
	err := s.inRunTx(ctx, runID, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, s.q(`UPDATE {S}.runs SET sweep_skipped = $1 WHERE id = $2 AND sweep_skipped = ''`), clean(reason), runID)
		return err
	})
	return s.wrap(fmt.Sprintf("run %d: record the skipped sweep", runID), err)
}
