package checkpoint

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/idemsync/idemsync/contract"
)

// insertSchemaChanges records the columns the page added or widened, and
// adds what it discarded to its run's, in its checkpoint transaction
// (docs/job-file.md, "The schema contract").
func insertSchemaChanges(ctx context.Context, tx *sql.Tx, job string, p *contract.PageCommit, now string) error {
	for i, c := range p.SchemaChanges {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO schema_changes (job, run_id, tbl, col, from_type, to_type, reason, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, job, p.RunID, c.Table, c.Column, c.From, c.To, c.Reason, now); err != nil {
			return fmt.Errorf("insert schema change %d of %d: %w", i+1, len(p.SchemaChanges), err)
		}
	}
	if d := p.SchemaDiscards; d != (contract.SchemaDiscards{}) {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO run_schema_discards (run_id, new_fields, nulled_values, dropped_rows) VALUES (?, ?, ?, ?)
			ON CONFLICT (run_id) DO UPDATE SET new_fields = new_fields + excluded.new_fields,
				nulled_values = nulled_values + excluded.nulled_values, dropped_rows = dropped_rows + excluded.dropped_rows`,
			p.RunID, d.NewFields, d.Values, d.Rows); err != nil {
			return fmt.Errorf("count schema discards: %w", err)
		}
	}
	return nil
}

// SchemaChanges returns the job's schema changes, newest first; n <= 0
// returns all of them. Errors are *contract.Error (exit 1).
func (s *Store) SchemaChanges(ctx context.Context, job string, n int) ([]contract.SchemaChange, error) {
	op := "job " + job + ": list schema changes"
	if n <= 0 {
		n = -1 // SQLite: no limit
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT id, job, run_id, tbl, col, from_type, to_type, reason, at
		FROM schema_changes WHERE job = ? ORDER BY id DESC LIMIT ?`, job, n)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var out []contract.SchemaChange
	for rows.Next() {
		var c contract.SchemaChange
		var at sql.NullString
		if err := rows.Scan(&c.ID, &c.Job, &c.RunID, &c.Table, &c.Column, &c.From, &c.To, &c.Reason, &at); err != nil {
			return nil, s.wrap(op, err)
		}
		if c.At, err = parseTime(at); err != nil {
			return nil, s.wrap(op, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}
