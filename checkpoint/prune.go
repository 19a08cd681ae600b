package checkpoint

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// DefaultRetention is how long runs and their page rows are kept: prune's
// default --keep, and the retention run applies after every run.
const DefaultRetention = 30 * 24 * time.Hour

// prunable selects the job's runs Prune may delete: finished for good
// (completed or abandoned) before the cutoff, and none of the job's latest
// run, latest completed run, or latest completed run of kind run (what
// `continue: true` starts from), nor the last full pass that swept with
// proof or any full pass after it (the next sweep reads their keys:
// docs/deletions.md, "Two passes"). Unfinished runs (running, interrupted,
// failed, partial) and their pages are never touched: resume needs them.
const prunable = `job = ?1 AND status IN ('completed', 'abandoned')
	AND coalesce(finished_at, started_at) < ?2
	AND id <> (SELECT max(id) FROM runs WHERE job = ?1)
	AND id <> coalesce((SELECT max(id) FROM runs WHERE job = ?1 AND status = 'completed'), 0)
	AND id <> coalesce((SELECT max(id) FROM runs WHERE job = ?1 AND status = 'completed' AND kind = 'run'), 0)
	AND NOT (full = 1 AND id >= coalesce((SELECT max(id) FROM runs WHERE job = ?1 AND status = 'completed' AND swept = 1), id + 1))`

// Prune deletes the page rows and runs of job that finished more than keep
// ago, in one transaction, except what a later run needs (see prunable).
// A run with dead letters keeps its row (the dead letters name it) but
// loses its page rows. Other tables (marks, counters, dead letters) are
// untouched. It needs no run lock: the protected runs are chosen inside
// the transaction. Errors are *contract.Error (exit 1, or 3 when the file is
// busy).
func (s *Store) Prune(ctx context.Context, job string, keep time.Duration) (contract.PruneStats, error) {
	st := contract.PruneStats{Job: job}
	if err := checkJob(job); err != nil {
		return st, s.wrap("prune", err)
	}
	cutoff := formatTime(s.now().Add(-keep))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM pages WHERE run_id IN (SELECT id FROM runs WHERE `+prunable+`)`, job, cutoff)
		if err != nil {
			return fmt.Errorf("delete pages: %w", err)
		}
		st.Pages, _ = res.RowsAffected()
		if _, err := tx.ExecContext(ctx, supersededKeysSQL, job); err != nil { // pending.go
			return fmt.Errorf("drop superseded keys: %w", err)
		}
		res, err = tx.ExecContext(ctx, `DELETE FROM runs WHERE `+prunable+`
			AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.run_id = runs.id)`, job, cutoff)
		if err != nil {
			return fmt.Errorf("delete runs: %w", err)
		}
		st.Runs, _ = res.RowsAffected()
		// A run's child table and schema discard counts go with it
		// (docs/job-file.md, "Child tables", "The schema contract").
		if _, err := tx.ExecContext(ctx, `DELETE FROM run_children WHERE run_id NOT IN (SELECT id FROM runs)`); err != nil {
			return fmt.Errorf("delete child table counts: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM run_schema_discards WHERE run_id NOT IN (SELECT id FROM runs)`); err != nil {
			return fmt.Errorf("delete schema discard counts: %w", err)
		}
		// Run keys answer a second start of the same schedule: they go
		// with the runs they stood for (docs/operations.md, "Run keys").
		if _, err := tx.ExecContext(ctx, `DELETE FROM run_keys WHERE job = ? AND at < ?`, job, cutoff); err != nil {
			return fmt.Errorf("delete run keys: %w", err)
		}
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE job = ?`, job).Scan(&st.Kept)
	})
	if err != nil {
		return st, s.wrap("job "+job+": prune", err)
	}
	if st.Runs+st.Pages > 0 {
		s.log.Info("pruned old runs", "job", job, "runs", st.Runs, "pages", st.Pages, "kept", st.Kept)
	}
	return st, nil
}

// JobNames returns the names of the jobs in the file, sorted. Errors are
// *contract.Error (exit 1).
func (s *Store) JobNames(ctx context.Context) ([]string, error) {
	names, err := s.jobNames(ctx)
	if err != nil {
		return nil, s.wrap("list jobs", err)
	}
	return names, nil
}

// Compact gives the space of deleted rows back to the file system: the
// rows prune deleted are only free pages inside the file, and their
// deletion passed through the -wal file, which grew. It rewrites the file
// (VACUUM) whenever it has a free page, and empties the -wal file
// (docs/operations.md, "Retention and prune").
func (s *Store) Compact(ctx context.Context) error {
	free, total, err := s.freePages(ctx)
	if err != nil {
		return err
	}
	if free == 0 {
		return s.Checkpoint(ctx)
	}
	s.log.Info("giving free space back to the file system (VACUUM)", "free_pages", free, "pages", total)
	return s.vacuum(ctx)
}

// vacuum rewrites the file and truncates its -wal file.
func (s *Store) vacuum(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, "VACUUM"); err != nil {
		return s.wrap("vacuum", err)
	}
	return s.Checkpoint(ctx)
}

// Checkpoint copies the -wal file into the state file and truncates it to
// nothing, so that Size counts only what the file holds.
func (s *Store) Checkpoint(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return s.wrap("checkpoint the -wal file", err)
	}
	return nil
}

// Size returns the bytes of the state file with its -wal file.
func (s *Store) Size(context.Context) int64 {
	var n int64
	for _, p := range []string{s.abs, s.abs + "-wal"} {
		if st, err := os.Stat(p); err == nil {
			n += st.Size()
		}
	}
	return n
}

// freePages returns the file's free pages and its page count.
func (s *Store) freePages(ctx context.Context) (free, total int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT (SELECT freelist_count FROM pragma_freelist_count), (SELECT page_count FROM pragma_page_count)`).Scan(&free, &total)
	if err != nil {
		return 0, 0, s.wrap("count free pages", err)
	}
	return free, total, nil
}
