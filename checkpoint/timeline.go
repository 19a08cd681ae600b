package checkpoint

import (
	"context"
	"database/sql"
	"time"
)

// LatestStart returns the latest runs.started_at of the state file, zero
// when it holds no run (docs/deletions.md, "One time line per job").
// started_at is written in one fixed-width UTC layout (timeLayout), so
// the text's max is the latest time.
func (s *Store) LatestStart(ctx context.Context) (time.Time, error) {
	var v sql.NullString
	if err := s.db.QueryRowContext(ctx, `SELECT max(started_at) FROM runs`).Scan(&v); err != nil {
		return time.Time{}, s.wrap("read the latest run start", err)
	}
	t, err := parseTime(v)
	if err != nil {
		return time.Time{}, s.wrap("read the latest run start", err)
	}
	return t, nil
}
