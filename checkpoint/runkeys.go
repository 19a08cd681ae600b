package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// RunKey returns the result recorded under job and key (docs/operations.md,
// "Run keys"). Errors are *contract.Error (exit 1, or 3 when the file is
// busy).
func (s *Store) RunKey(ctx context.Context, job, key string) (string, bool, error) {
	var result string
	err := s.db.QueryRowContext(ctx, `SELECT result FROM run_keys WHERE job = ? AND key = ?`, job, key).Scan(&result)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.wrap("job "+job+": read run key", err)
	}
	return result, true, nil
}

// SaveRunKey records result under job and key; the first result stays.
// Errors are as RunKey's.
func (s *Store) SaveRunKey(ctx context.Context, job, key, result string, t time.Time) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO run_keys (job, key, result, at) VALUES (?, ?, ?, ?)
			ON CONFLICT (job, key) DO NOTHING`, job, key, result, formatTime(t))
		return err
	})
	if err != nil {
		return s.wrap("job "+job+": save run key", err)
	}
	return nil
}
