package pgstate

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/contract"
)

// queueSchemaChanges queues the columns the page added or widened, and
// what it discarded added to its run's, into its checkpoint batch
// (docs/job-file.md, "The schema contract").
func (s *Store) queueSchemaChanges(b *pgx.Batch, job string, p *contract.PageCommit, now time.Time) {
	for i, c := range p.SchemaChanges {
		named(b.Queue(s.q(`INSERT INTO {S}.schema_changes (job, run_id, tbl, col, from_type, to_type, reason, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`), job, p.RunID, clean(c.Table), clean(c.Column), c.From, c.To, clean(c.Reason), now),
			fmt.Sprintf("insert schema change %d of %d", i+1, len(p.SchemaChanges)))
	}
	if d := p.SchemaDiscards; d != (contract.SchemaDiscards{}) {
		named(b.Queue(s.q(`INSERT INTO {S}.run_schema_discards AS d (run_id, new_fields, nulled_values, dropped_rows) VALUES ($1, $2, $3, $4)
			ON CONFLICT (run_id) DO UPDATE SET new_fields = d.new_fields + excluded.new_fields,
				nulled_values = d.nulled_values + excluded.nulled_values, dropped_rows = d.dropped_rows + excluded.dropped_rows`),
			p.RunID, d.NewFields, d.Values, d.Rows), "count schema discards")
	}
}

// SchemaChanges returns the job's schema changes, newest first (n <= 0:
// all).
func (s *Store) SchemaChanges(ctx context.Context, job string, n int) ([]contract.SchemaChange, error) {
	var limit any
	if n > 0 {
		limit = n
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT id, job, run_id, tbl, col, from_type, to_type, reason, at
		FROM {S}.schema_changes WHERE job = $1 ORDER BY id DESC LIMIT $2`), job, limit)
	if err == nil {
		var out []contract.SchemaChange
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (contract.SchemaChange, error) {
			var c contract.SchemaChange
			err := r.Scan(&c.ID, &c.Job, &c.RunID, &c.Table, &c.Column, &c.From, &c.To, &c.Reason, &c.At)
			c.At = c.At.UTC()
			return c, err
		})
		if err == nil {
			return nilIfEmpty(out), nil
		}
	}
	return nil, s.wrap("job "+job+": list schema changes", err)
}
