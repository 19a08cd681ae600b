package pgstate

import (
	"context"
	"time"
)

// LatestStart returns the latest runs.started_at of the state, zero when
// it holds no run (docs/deletions.md, "One time line per job").
func (s *Store) LatestStart(ctx context.Context) (time.Time, error) {
	var t *time.Time
	if err := s.pool.QueryRow(ctx, s.q(`SELECT max(started_at) FROM {S}.runs`)).Scan(&t); err != nil {
		return time.Time{}, s.wrap("read the latest run start", err)
	}
	if t == nil {
		return time.Time{}, nil
	}
	return t.UTC(), nil
}
