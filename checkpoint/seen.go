package checkpoint

import (
	"context"
	"fmt"

	"github.com/idemsync/idemsync/checkpoint/keylist"
)

// SeenKeys calls fn with the key of every row of every page committed to
// runID, over all the invocations the run spanned, in page order (a key on
// two pages comes twice). complete is false when a page of the run was
// committed without its keys: such a set must not decide a deletion.
func (s *Store) SeenKeys(ctx context.Context, runID int64, fn func(key string) error) (complete bool, err error) {
	op := fmt.Sprintf("run %d: read seen keys", runID)
	rows, err := s.db.QueryContext(ctx, `SELECT seq, keys FROM pages WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return false, s.wrap(op, err)
	}
	defer rows.Close()
	complete = true
	for rows.Next() {
		var seq int64
		var b []byte
		if err := rows.Scan(&seq, &b); err != nil {
			return false, s.wrap(op, err)
		}
		if b == nil {
			complete = false
			continue
		}
		if err := keylist.Decode(b, fn); err != nil {
			return false, s.wrap(op, fmt.Errorf("page %d: %w", seq, err))
		}
	}
	if err := rows.Err(); err != nil {
		return false, s.wrap(op, err)
	}
	return complete, nil
}
