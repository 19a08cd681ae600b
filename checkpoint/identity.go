package checkpoint

import (
	"context"
	"database/sql"
	"fmt"
)

// ClearMark forgets the job's saved high-water mark, so that its next run
// starts from pagination.initial or incremental.initial (or no mark). A
// job never seen is left alone. Errors are *contract.Error (exit 1).
func (s *Store) ClearMark(ctx context.Context, job string) error {
	op := "job " + job + ": clear mark"
	if err := checkJob(job); err != nil {
		return s.wrap(op, err)
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET hwm = '' WHERE name = ?`, job); err != nil {
			return fmt.Errorf("clear mark: %w", err)
		}
		return nil
	})
	if err != nil {
		return s.wrap(op, err)
	}
	s.log.Debug("saved mark cleared", "job", job)
	return nil
}

// DueFullPass makes the job's next run a full pass (jobs.full_due); the
// saved mark stays. A job with no row yet is left as it is.
func (s *Store) DueFullPass(ctx context.Context, job string) error {
	op := "job " + job + ": make the next run a full pass"
	if err := checkJob(job); err != nil {
		return s.wrap(op, err)
	}
	now := s.stamp()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET full_due = 1, updated_at = ? WHERE name = ?`, now, job)
		return err
	})
	if err != nil {
		return s.wrap(op, err)
	}
	return nil
}

// AdoptIdentity records identity as the walk of run runID and of the job
// where none is stored yet (a state file written before identities were
// kept); a stored identity is never overwritten. Errors are *contract.Error
// (exit 1).
func (s *Store) AdoptIdentity(ctx context.Context, job string, runID int64, identity string) error {
	op := "job " + job + ": adopt identity"
	if err := checkJob(job); err != nil {
		return s.wrap(op, err)
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET identity = ? WHERE id = ? AND job = ? AND identity IS NULL`,
			identity, runID, job); err != nil {
			return fmt.Errorf("adopt run identity: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET identity = ? WHERE name = ? AND identity IS NULL`,
			identity, job); err != nil {
			return fmt.Errorf("adopt job identity: %w", err)
		}
		return nil
	})
	if err != nil {
		return s.wrap(op, err)
	}
	return nil
}
