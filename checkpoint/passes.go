package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemsync/idemsync/contract"
)

// CompletePass completes the unfinished run runID, which read its last
// page: it adds deleted to the run's deleted count (and the job's metrics
// counter), marks it completed
// and, when the run is a full pass, makes its start the job's last full
// pass (jobs.full_pass_at) and clears a pending full pass, all in one
// transaction. The run must be running and owned by this Store, as for
// CommitPage. Errors are *contract.Error (exit 1), or wrap contract.ErrLocked
// when another Store took the run over.
func (s *Store) CompletePass(ctx context.Context, runID int64, deleted int64) error {
	now := s.stamp()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var job string
		var full bool
		var started string
		err := tx.QueryRowContext(ctx, `
			UPDATE runs SET status = ?, finished_at = ?, deleted = deleted + ?
			WHERE id = ? AND status = ? AND owner = ? RETURNING job, full, started_at`,
			contract.RunCompleted, now, deleted, runID, contract.RunRunning, s.token).Scan(&job, &full, &started)
		if errors.Is(err, sql.ErrNoRows) {
			return s.notFinishable(ctx, tx, runID)
		}
		if err != nil {
			return fmt.Errorf("complete run: %w", err)
		}
		if err := addCounters(ctx, tx, job, 0, 0, 0, 0, deleted, 0); err != nil {
			return err
		}
		if !full {
			return nil
		}
		return recordFullPass(ctx, tx, job, started, now)
	})
	if err != nil {
		return s.wrap(fmt.Sprintf("complete run %d", runID), err)
	}
	return nil
}

// RefusePass ends the unfinished run runID for good with status refused
// and errMsg (stored as given: the caller redacts it), and makes the
// job's next run a full pass (jobs.full_due), in one transaction. A
// refused run is never continued: its seen keys are dropped with it.
// Errors are as for CompletePass.
func (s *Store) RefusePass(ctx context.Context, runID int64, errMsg string) error {
	now := s.stamp()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var job string
		err := tx.QueryRowContext(ctx, `
			UPDATE runs SET status = ?, error = ?, finished_at = ?
			WHERE id = ? AND status = ? AND owner = ? RETURNING job`,
			contract.RunRefused, errMsg, now, runID, contract.RunRunning, s.token).Scan(&job)
		if errors.Is(err, sql.ErrNoRows) {
			return s.notFinishable(ctx, tx, runID)
		}
		if err != nil {
			return fmt.Errorf("refuse run: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET full_due = 1, updated_at = ? WHERE name = ?`, now, job); err != nil {
			return fmt.Errorf("save pending full pass: %w", err)
		}
		return nil
	})
	if err != nil {
		return s.wrap(fmt.Sprintf("refuse run %d", runID), err)
	}
	return nil
}

// SkipSweep records reason as why the full pass runID cannot prove the
// absence of the rows it did not see (docs/deletions.md): its sweep does
// nothing. The first reason stored stays; later ones change nothing. A
// continued run keeps it. Errors are *contract.Error (exit 1).
func (s *Store) SkipSweep(ctx context.Context, runID int64, reason string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE runs SET sweep_skipped = ? WHERE id = ? AND sweep_skipped = ''`, reason, runID)
		return err
	})
	if err != nil {
		return s.wrap(fmt.Sprintf("run %d: record the skipped sweep", runID), err)
	}
	return nil
}
