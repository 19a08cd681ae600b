package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	idsync "github.com/idemsync/idemsync/sync"
)

var _ idsync.ParentStore = (*Store)(nil)

// saveParents stores a child run's parent snapshot within StartRun's
// transaction; nil stores none (a run that is no child's).
func saveParents(ctx context.Context, tx *sql.Tx, runID int64, rows []string) error {
	if rows == nil {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET parents = ? WHERE id = ?`, len(rows), runID); err != nil {
		return fmt.Errorf("save parent snapshot: %w", err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO run_parents (run_id, seq, row) VALUES (?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("save parent snapshot: %w", err)
	}
	defer stmt.Close()
	for i, r := range rows {
		if _, err := stmt.ExecContext(ctx, runID, i, r); err != nil {
			return fmt.Errorf("save parent snapshot: %w", err)
		}
	}
	return nil
}

// RunParents implements idsync.ParentStore: the parent snapshot stored
// with a child run, in order (empty, not nil, for a run without parent
// rows). It returns an *idsync.Error (exit 1) for a run without one.
func (s *Store) RunParents(ctx context.Context, runID int64) ([]string, error) {
	op := fmt.Sprintf("run %d: read parent snapshot", runID)
	var n sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT parents FROM runs WHERE id = ?`, runID).Scan(&n)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, s.wrap(op, errors.New("no such run"))
	case err != nil:
		return nil, s.wrap(op, err)
	case !n.Valid:
		return nil, s.wrap(op, errors.New("the run has no parent snapshot"))
	}
	rows, err := s.db.QueryContext(ctx, `SELECT row FROM run_parents WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	out := make([]string, 0, n.Int64)
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, s.wrap(op, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
	}
	if int64(len(out)) != n.Int64 {
		return nil, s.wrap(op, fmt.Errorf("%d parent rows stored, the run says %d", len(out), n.Int64))
	}
	return out, nil
}
