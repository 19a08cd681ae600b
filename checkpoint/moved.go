package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// MarkMoved records that the file's state now lives at to (a place as it
// may be printed: no password), so that a run still pointed at the file
// refuses (docs/operations.md, "Moving a job between hosts").
func (s *Store) MarkMoved(ctx context.Context, to string) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO moved (to_state, at) VALUES (?, ?)`, to, formatTime(s.now()))
		return err
	})
	if err != nil {
		return s.wrap("mark the state as moved", err)
	}
	return nil
}

// movedTo returns where the state went, "" when it stayed.
func (s *Store) movedTo(ctx context.Context) (string, time.Time, error) {
	var to string
	var at sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT to_state, at FROM moved ORDER BY rowid DESC LIMIT 1`).Scan(&to, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, err
	}
	t, _ := parseTime(at)
	return to, t, nil
}

// refuseMoved is the error of a lock on a state file whose state moved.
func (s *Store) refuseMoved(ctx context.Context, job string) error {
	to, at, err := s.movedTo(ctx)
	if err != nil {
		return s.wrap("job "+job+": lock", err)
	}
	if to == "" {
		return nil
	}
	return &contract.Error{
		Class: contract.Invalid,
		Msg:   fmt.Sprintf("state file %s was moved to %s on %s (idemsync state migrate): it is no longer the state of job %s", s.path, to, at.Format(time.RFC3339), job),
		Hint:  "point the job at the new state: state: in the job file, --state or $IDEMSYNC_STATE",
	}
}
