package checkpoint

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Forget removes everything the state file keeps of job (a resource that
// was removed from its job file): its runs with their pages, its dead letters, its checkpoint, saved mark and identity,
// its lock note, its stored auth token and the open cycles of the
// --resource selections that name it, in one transaction. The lifetime metrics counters
// stay (prune never touches them). The caller holds the job's lock, or
// the lock of the job file it belonged to. It returns the number of runs
// removed; errors are *contract.Error (exit 1, or 3 when the file is busy).
func (s *Store) Forget(ctx context.Context, job string) (int64, error) {
	if err := checkJob(job); err != nil {
		return 0, s.wrap("forget", err)
	}
	var runs int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE job = ?`, job).Scan(&runs); err != nil {
			return fmt.Errorf("count runs: %w", err)
		}
		for _, q := range []string{
			`DELETE FROM pages WHERE run_id IN (SELECT id FROM runs WHERE job = ?)`,
			`DELETE FROM run_children WHERE run_id IN (SELECT id FROM runs WHERE job = ?)`,
			`DELETE FROM run_schema_discards WHERE run_id IN (SELECT id FROM runs WHERE job = ?)`,
			`DELETE FROM dead_letters WHERE job = ?`,
			`DELETE FROM schema_changes WHERE job = ?`,
			`DELETE FROM runs WHERE job = ?`,
			`DELETE FROM locks WHERE job = ?`,
			`DELETE FROM auth_credentials WHERE job = ?`,
			`DELETE FROM run_keys WHERE job = ?`,
			`DELETE FROM jobs WHERE name = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, job); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		// The open cycles of --resource selections that name it.
		if file, res, ok := strings.Cut(job, "."); ok {
			if _, err := tx.ExecContext(ctx, `DELETE FROM job_cycles WHERE substr(name, 1, length(?1) + 1) = ?1 || '|'
				AND instr(',' || substr(name, length(?1) + 2) || ',', ',' || ?2 || ',') > 0`, file, res); err != nil {
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
