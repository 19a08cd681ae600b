package pgstate

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// RunKey returns the result recorded under job and key (docs/operations.md,
// "Run keys").
func (s *Store) RunKey(ctx context.Context, job, key string) (string, bool, error) {
	var result string
	err := s.pool.QueryRow(ctx, s.q(`SELECT result FROM {S}.run_keys WHERE job = $1 AND key = $2`), job, key).Scan(&result)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.wrap("job "+job+": read run key", err)
	}
	return result, true, nil
}

// SaveRunKey records result under job and key; the first result stays.
func (s *Store) SaveRunKey(ctx context.Context, job, key, result string, t time.Time) error {
	_, err := s.pool.Exec(ctx, s.q(`INSERT INTO {S}.run_keys (job, key, result, at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (job, key) DO NOTHING`), job, key, result, t.UTC())
	if err != nil {
		return s.wrap("job "+job+": save run key", err)
	}
	return nil
}
