package pgstate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5"
)

// prunable selects the job's runs Prune may delete, as in the SQLite
// store: finished for good before the cutoff, and none of the job's
// latest run, latest completed run, or latest completed run of kind run,
// nor the last full pass that swept with proof or any full pass after it
// (the next sweep reads their keys: docs/deletions.md, "Two passes").
const prunable = `job = $1 AND status IN ('completed', 'abandoned')
	AND coalesce(finished_at, started_at) < $2
	AND id <> (SELECT max(id) FROM {S}.runs WHERE job = $1)
	AND id <> coalesce((SELECT max(id) FROM {S}.runs WHERE job = $1 AND status = 'completed'), 0)
	AND id <> coalesce((SELECT max(id) FROM {S}.runs WHERE job = $1 AND status = 'completed' AND kind = 'run'), 0)
	AND NOT (full_pass AND id >= coalesce((SELECT max(id) FROM {S}.runs WHERE job = $1 AND status = 'completed' AND swept), id + 1))`

// Prune deletes the runs of job (and their pages) that finished more than
// keep ago, in one transaction; a run with dead letters keeps its row.
func (s *Store) Prune(ctx context.Context, job string, keep time.Duration) (contract.PruneStats, error) {
	st := contract.PruneStats{Job: job}
	if err := checkJob(job); err != nil {
		return st, s.wrap("prune", err)
	}
	cutoff := s.now().Add(-keep).UTC()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, s.q(`DELETE FROM {S}.pages WHERE run_id IN (SELECT id FROM {S}.runs WHERE `+prunable+`)`), job, cutoff)
		if err != nil {
			return fmt.Errorf("delete pages: %w", err)
		}
		st.Pages = tag.RowsAffected()
		if _, err := tx.Exec(ctx, s.q(supersededKeysSQL), job); err != nil { // pending.go
			return fmt.Errorf("drop superseded keys: %w", err)
		}
		tag, err = tx.Exec(ctx, s.q(`DELETE FROM {S}.runs r WHERE `+prunable+`
			AND NOT EXISTS (SELECT 1 FROM {S}.dead_letters d WHERE d.run_id = r.id)`), job, cutoff)
		if err != nil {
			return fmt.Errorf("delete runs: %w", err)
		}
		st.Runs = tag.RowsAffected()
		// A run's child table and schema discard counts go with it
		// (docs/job-file.md, "Child tables", "The schema contract").
		if _, err := tx.Exec(ctx, s.q(`DELETE FROM {S}.run_children c WHERE NOT EXISTS (SELECT 1 FROM {S}.runs r WHERE r.id = c.run_id)`)); err != nil {
			return fmt.Errorf("delete child table counts: %w", err)
		}
		if _, err := tx.Exec(ctx, s.q(`DELETE FROM {S}.run_schema_discards d WHERE NOT EXISTS (SELECT 1 FROM {S}.runs r WHERE r.id = d.run_id)`)); err != nil {
			return fmt.Errorf("delete schema discard counts: %w", err)
		}
		// Run keys go with the runs they stood for (docs/operations.md, "Run keys").
		if _, err := tx.Exec(ctx, s.q(`DELETE FROM {S}.run_keys WHERE job = $1 AND at < $2`), job, cutoff); err != nil {
			return fmt.Errorf("delete run keys: %w", err)
		}
		return tx.QueryRow(ctx, s.q(`SELECT count(*) FROM {S}.runs WHERE job = $1`), job).Scan(&st.Kept)
	})
	if err != nil {
		return st, s.wrap("job "+job+": prune", err)
	}
	if st.Runs+st.Pages > 0 {
		s.log.Info("pruned old runs", "job", job, "runs", st.Runs, "pages", st.Pages, "kept", st.Kept)
	}
	return st, nil
}

// Forget removes everything kept of job except its metrics counters and
// its lease row (whose token must only grow), in one transaction.
func (s *Store) Forget(ctx context.Context, job string) (int64, error) {
	if err := checkJob(job); err != nil {
		return 0, s.wrap("forget", err)
	}
	var runs int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, s.q(`SELECT count(*) FROM {S}.runs WHERE job = $1`), job).Scan(&runs); err != nil {
			return fmt.Errorf("count runs: %w", err)
		}
		for _, q := range []string{
			`DELETE FROM {S}.pages WHERE run_id IN (SELECT id FROM {S}.runs WHERE job = $1)`,
			`DELETE FROM {S}.run_children WHERE run_id IN (SELECT id FROM {S}.runs WHERE job = $1)`,
			`DELETE FROM {S}.run_schema_discards WHERE run_id IN (SELECT id FROM {S}.runs WHERE job = $1)`,
			`DELETE FROM {S}.dead_letters WHERE job = $1`,
			`DELETE FROM {S}.schema_changes WHERE job = $1`,
			`DELETE FROM {S}.runs WHERE job = $1`,
			`DELETE FROM {S}.auth_credentials WHERE job = $1`,
			`DELETE FROM {S}.run_keys WHERE job = $1`,
			`DELETE FROM {S}.jobs WHERE name = $1`,
		} {
			if _, err := tx.Exec(ctx, s.q(q), job); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		// The open cycles of --resource selections that name it.
		if file, res, ok := strings.Cut(job, "."); ok {
			if _, err := tx.Exec(ctx, s.q(`DELETE FROM {S}.job_cycles WHERE left(name, length($1) + 1) = $1 || '|'
				AND strpos(',' || substr(name, length($1) + 2) || ',', ',' || $2 || ',') > 0`), file, res); err != nil {
				return fmt.Errorf("forget cycles: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, s.wrap("job "+job+": forget", err)
	}
	s.log.Info("forgot a removed resource", "job", job, "runs", runs)
	return runs, nil
}

// Compact does nothing: PostgreSQL's autovacuum gives the space of deleted
// rows back to the tables, and VACUUM FULL would lock every host out.
func (s *Store) Compact(context.Context) error { return nil }

// Size is the bytes of the schema's tables with their indexes and TOAST.
func (s *Store) Size(ctx context.Context) int64 {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = $1 AND c.relkind = 'r'`, s.name).Scan(&n)
	if err != nil {
		s.log.Debug("measure the state", "err", err)
		return 0
	}
	return n
}
