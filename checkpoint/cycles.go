package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Cycle returns when the open cycle of a job file (name: the job and the
// resources an invocation selected) began, and whether one is open.
// Errors are *contract.Error (exit 1, or 3 when the file is busy).
func (s *Store) Cycle(ctx context.Context, name string) (time.Time, bool, error) {
	var at sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT started_at FROM job_cycles WHERE name = ?`, name).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, s.wrap("read cycle of "+name, err)
	}
	t, err := parseTime(at)
	if err != nil {
		return time.Time{}, false, s.wrap("read cycle of "+name, err)
	}
	return t, true, nil
}

// OpenCycle records that a cycle of name began at t, replacing any open
// one. Errors are as Cycle's.
func (s *Store) OpenCycle(ctx context.Context, name string, t time.Time) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO job_cycles (name, started_at) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET started_at = excluded.started_at`, name, formatTime(t))
		return err
	})
	if err != nil {
		return s.wrap("open cycle of "+name, err)
	}
	return nil
}

// CloseCycle forgets the open cycle of name (none open is no error).
// Errors are as Cycle's.
func (s *Store) CloseCycle(ctx context.Context, name string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM job_cycles WHERE name = ?`, name)
		return err
	})
	if err != nil {
		return s.wrap("close cycle of "+name, err)
	}
	return nil
}
