package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemsync/idemsync/contract"
)

// queryer is what *sql.DB and *sql.Tx share for reading.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const runColumns = `id, job, kind, status, started_at, finished_at, pages, records,
	inserted, updated, unchanged, skipped, checkpoint, last_pos, window_mark,
	max_mark, from_pos, to_pos, error, number, coalesce(identity, ''), full, deleted, sweep_skipped,
	coalesce(live_before, -1), refused_since, swept, pending_deletes,
	(SELECT json_group_object(tbl, json_object('inserted', inserted, 'deleted', deleted)) FROM run_children WHERE run_id = id),
	(SELECT json_object('new_fields', new_fields, 'values', nulled_values, 'rows', dropped_rows) FROM run_schema_discards WHERE run_id = id)`

// scanRun reads one row selected with runColumns.
func scanRun(sc interface{ Scan(...any) error }) (*contract.RunInfo, error) {
	var r contract.RunInfo
	var started, finished, refusedSince, children, discards sql.NullString
	err := sc.Scan(&r.ID, &r.Job, &r.Kind, &r.Status, &started, &finished,
		&r.Pages, &r.Records, &r.Inserted, &r.Updated, &r.Unchanged, &r.Skipped,
		&r.Checkpoint, &r.Last, &r.Window, &r.MaxMark, &r.From, &r.To, &r.Error, &r.Number, &r.Identity, &r.Full, &r.Deleted, &r.SweepSkipped,
		&r.LiveBefore, &refusedSince, &r.Swept, &r.PendingDeletes, &children, &discards)
	if err != nil {
		return nil, err
	}
	if r.Children, err = contract.DecodeChildCounts(children.String); err != nil {
		return nil, fmt.Errorf("run %d: %w", r.ID, err)
	}
	if r.SchemaDiscards, err = contract.DecodeSchemaDiscards(discards.String); err != nil {
		return nil, fmt.Errorf("run %d: %w", r.ID, err)
	}
	if r.RefusedSince, err = parseTime(refusedSince); err != nil {
		return nil, fmt.Errorf("run %d: %w", r.ID, err)
	}
	if r.StartedAt, err = parseTime(started); err != nil {
		return nil, fmt.Errorf("run %d: %w", r.ID, err)
	}
	if r.FinishedAt, err = parseTime(finished); err != nil {
		return nil, fmt.Errorf("run %d: %w", r.ID, err)
	}
	return &r, nil
}

// latestRun returns the job's run with the highest id, or nil.
func latestRun(ctx context.Context, q queryer, job string) (*contract.RunInfo, error) {
	r, err := scanRun(q.QueryRowContext(ctx,
		`SELECT `+runColumns+` FROM runs WHERE job = ? ORDER BY id DESC LIMIT 1`, job))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read last run: %w", err)
	}
	return r, nil
}

// runStatus returns a run's job and status; sql.ErrNoRows when it does not
// exist.
func runStatus(ctx context.Context, q queryer, runID int64) (job, status string, err error) {
	err = q.QueryRowContext(ctx, `SELECT job, status FROM runs WHERE id = ?`, runID).Scan(&job, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", fmt.Errorf("run %d not found", runID)
	}
	return job, status, err
}

// touchJob makes sure the job's row exists and stamps its update time.
func touchJob(ctx context.Context, tx execer, job, now string) error {
	if _, err := tx.ExecContext(ctx, touchJobSQL, job, now, now); err != nil {
		return fmt.Errorf("save job %s: %w", job, err)
	}
	return nil
}

const touchJobSQL = `
		INSERT INTO jobs (name, created_at, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at`

// Unfinished returns the job's latest run when its status is running (a
// crashed run stays running), interrupted, failed or partial; otherwise,
// and for a job never run, it returns nil. Errors are *contract.Error (exit 1).
func (s *Store) Unfinished(ctx context.Context, job string) (*contract.RunInfo, error) {
	r, err := latestRun(ctx, s.db, job)
	if err != nil {
		return nil, s.wrap("job "+job, err)
	}
	if r == nil || !r.Unfinished() {
		return nil, nil
	}
	return r, nil
}

// StartRun records a new run of r.Job with status running and returns its
// ID. It keeps r's Kind (default run), Checkpoint, Last, Window, MaxMark,
// From, To, Identity, Full, LiveBefore and RefusedSince, and StartedAt (default now); counters start at
// zero. A run of kind run with an Identity also makes it the job's. The
// job's row is created when missing. Errors are *contract.Error (exit 1).
func (s *Store) StartRun(ctx context.Context, r *contract.RunInfo) (int64, error) {
	if r == nil {
		return 0, s.wrap("start run", errors.New("no run given"))
	}
	if err := checkJob(r.Job); err != nil {
		return 0, s.wrap("start run", err)
	}
	kind := r.Kind
	switch kind {
	case "":
		kind = contract.KindRun
	case contract.KindRun, contract.KindReplay:
	default:
		return 0, s.wrap("start run", fmt.Errorf("unknown run kind %q", kind))
	}
	now := s.stamp()
	started := now
	if !r.StartedAt.IsZero() {
		started = formatTime(r.StartedAt)
	}
	refusedSince := ""
	if !r.RefusedSince.IsZero() {
		refusedSince = formatTime(r.RefusedSince)
	}
	var id int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := touchJob(ctx, tx, r.Job, now); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, `
			INSERT INTO runs (job, kind, status, started_at, checkpoint, last_pos,
				window_mark, max_mark, from_pos, to_pos, owner, number, identity, full, live_before, refused_since)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
				(SELECT coalesce(max(number), 0) + 1 FROM runs WHERE job = ?), nullif(?, ''), ?, nullif(?, -1), nullif(?, '')) RETURNING id`,
			r.Job, kind, contract.RunRunning, started, r.Checkpoint, r.Last,
			r.Window, r.MaxMark, r.From, r.To, s.token, r.Job, r.Identity, r.Full, r.LiveBefore, refusedSince).Scan(&id)
		if err != nil {
			return fmt.Errorf("insert run: %w", err)
		}
		if kind == contract.KindRun && r.Identity != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET identity = ? WHERE name = ?`, r.Identity, r.Job); err != nil {
				return fmt.Errorf("save job identity: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, s.wrap("job "+r.Job+": start run", err)
	}
	s.log.Debug("run started", "job", r.Job, "run_id", id, "kind", kind)
	return id, nil
}

// Reopen sets an unfinished run (running, interrupted, failed or partial)
// back to running, owned by this Store (the caller holds the job's lock:
// a previous owner is gone), and clears its error and finish time. It returns an
// *contract.Error (exit 1) when the run does not exist or has finished for
// good (completed or abandoned).
func (s *Store) Reopen(ctx context.Context, runID int64) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE runs SET status = ?, error = '', finished_at = NULL, owner = ?
			WHERE id = ? AND status IN (?, ?, ?, ?)`,
			contract.RunRunning, s.token, runID,
			contract.RunRunning, contract.RunInterrupted, contract.RunFailed, contract.RunPartial)
		if err != nil {
			return fmt.Errorf("update run: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		_, status, err := runStatus(ctx, tx, runID)
		if err != nil {
			return err
		}
		return fmt.Errorf("run %d is %s, only an unfinished run can be reopened", runID, status)
	})
	if err != nil {
		return s.wrap(fmt.Sprintf("reopen run %d", runID), err)
	}
	return nil
}

// finalStatuses are the statuses FinishRun accepts.
var finalStatuses = map[string]bool{
	contract.RunInterrupted: true,
	contract.RunFailed:      true,
	contract.RunPartial:     true,
	contract.RunCompleted:   true,
	contract.RunAbandoned:   true,
}

// FinishRun sets a run's status (interrupted, failed, partial, completed or
// abandoned), its error message (stored as given: the caller redacts it)
// and its finish time. With status completed and hwm != "", the job's saved
// high-water mark becomes hwm, in the same transaction; the store does not
// compare marks, so the caller decides whether hwm may move backwards.
//
// Only an unfinished run this Store started or reopened can be finished
// (a completed one can only be confirmed completed); an
// unfinished run of any owner can be abandoned (the caller holds the
// job's lock). A run another Store took over returns an error wrapping
// contract.ErrLocked (exit 4) and is left as it is; a run already finished
// (completed, abandoned) or unknown, or an unknown status, returns an
// *contract.Error (exit 1).
func (s *Store) FinishRun(ctx context.Context, runID int64, status, errMsg, hwm string) error {
	if !finalStatuses[status] {
		return s.wrap(fmt.Sprintf("finish run %d", runID), fmt.Errorf("invalid final status %q", status))
	}
	if err := s.stillAtPath(); err != nil {
		return s.replaced(fmt.Sprintf("finish run %d", runID), err)
	}
	now := s.stamp()
	var job string
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		q := `UPDATE runs SET status = ?, error = ?, finished_at = ?
			WHERE id = ? AND owner = ? AND (status IN ('running', 'interrupted', 'failed', 'partial')
				OR status = 'completed' AND ? = 'completed') RETURNING job`
		args := []any{status, errMsg, now, runID, s.token, status}
		if status == contract.RunAbandoned {
			q = `UPDATE runs SET status = ?, error = ?, finished_at = ?
			WHERE id = ? AND status IN ('running', 'interrupted', 'failed', 'partial') RETURNING job`
			args = args[:4]
		}
		err := tx.QueryRowContext(ctx, q, args...).Scan(&job)
		if errors.Is(err, sql.ErrNoRows) {
			return s.notFinishable(ctx, tx, runID)
		}
		if err != nil {
			return fmt.Errorf("update run: %w", err)
		}
		if status != contract.RunCompleted || hwm == "" {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET hwm = ?, updated_at = ? WHERE name = ?`,
			hwm, now, job); err != nil {
			return fmt.Errorf("save high-water mark: %w", err)
		}
		return nil
	})
	if err != nil {
		return s.wrap(fmt.Sprintf("finish run %d", runID), err)
	}
	s.log.Debug("run finished", "job", job, "run_id", runID, "status", status)
	return nil
}

// notFinishable explains why FinishRun changed nothing.
func (s *Store) notFinishable(ctx context.Context, tx *sql.Tx, runID int64) error {
	_, status, err := runStatus(ctx, tx, runID)
	if err != nil {
		return err
	}
	if err := s.ownedElsewhere(ctx, tx, runID); err != nil {
		return err
	}
	return fmt.Errorf("run %d is %s, it cannot be finished again", runID, status)
}

// Runs returns the job's latest n runs, newest first (n <= 0: all of
// them); none for a job never run. Errors are *contract.Error (exit 1).
func (s *Store) Runs(ctx context.Context, job string, n int) ([]contract.RunInfo, error) {
	if n <= 0 {
		n = -1 // SQLite: no limit
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT `+runColumns+` FROM runs WHERE job = ? ORDER BY id DESC LIMIT ?`, job, n)
	if err != nil {
		return nil, s.wrap("job "+job+": list runs", err)
	}
	defer rows.Close()
	var out []contract.RunInfo
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, s.wrap("job "+job+": list runs", err)
		}
		out = append(out, *r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("job "+job+": list runs", err)
	}
	return out, nil
}
