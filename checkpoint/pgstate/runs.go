package pgstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5"
)

const runColumns = `id, job, kind, status, started_at, finished_at, pages, records,
	inserted, updated, unchanged, skipped, checkpoint, last_pos, window_mark,
	max_mark, from_pos, to_pos, error, number, coalesce(identity, ''), full_pass, deleted, sweep_skipped,
	coalesce(live_before, -1), refused_since, swept, pending_deletes,
	(SELECT json_object_agg(tbl, json_build_object('inserted', inserted, 'deleted', deleted))::text FROM {S}.run_children WHERE run_id = id),
	(SELECT json_build_object('new_fields', new_fields, 'values', nulled_values, 'rows', dropped_rows)::text FROM {S}.run_schema_discards WHERE run_id = id)`

// scanRun reads one row selected with runColumns.
func scanRun(sc pgx.Row) (*contract.RunInfo, error) {
	var r contract.RunInfo
	var finished, refusedSince *time.Time
	var children, discards *string
	err := sc.Scan(&r.ID, &r.Job, &r.Kind, &r.Status, &r.StartedAt, &finished,
		&r.Pages, &r.Records, &r.Inserted, &r.Updated, &r.Unchanged, &r.Skipped,
		&r.Checkpoint, &r.Last, &r.Window, &r.MaxMark, &r.From, &r.To, &r.Error, &r.Number, &r.Identity, &r.Full, &r.Deleted, &r.SweepSkipped,
		&r.LiveBefore, &refusedSince, &r.Swept, &r.PendingDeletes, &children, &discards)
	if err != nil {
		return nil, err
	}
	if children != nil {
		if r.Children, err = contract.DecodeChildCounts(*children); err != nil {
			return nil, fmt.Errorf("run %d: %w", r.ID, err)
		}
	}
	if discards != nil {
		if r.SchemaDiscards, err = contract.DecodeSchemaDiscards(*discards); err != nil {
			return nil, fmt.Errorf("run %d: %w", r.ID, err)
		}
	}
	r.StartedAt = r.StartedAt.UTC()
	r.FinishedAt = utc(finished)
	r.RefusedSince = utc(refusedSince)
	return &r, nil
}

func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// opt is t as a nullable value: NULL for the zero time.
func opt(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// clean makes free text (an error, a reason) storable as PostgreSQL text,
// which holds neither NUL nor invalid UTF-8: those bytes become U+FFFD.
func clean(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// latestRun returns the job's run with the highest id, or nil.
func (s *Store) latestRun(ctx context.Context, q queryRower, job string, kind string) (*contract.RunInfo, error) {
	r, err := scanRun(q.QueryRow(ctx, s.q(`SELECT `+runColumns+` FROM {S}.runs
		WHERE job = $1 AND ($2 = '' OR kind = $2) ORDER BY id DESC LIMIT 1`), job, kind))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read last run: %w", err)
	}
	return r, nil
}

// runStatus returns a run's job and status.
func (s *Store) runStatus(ctx context.Context, q queryRower, runID int64) (job, status, owner string, err error) {
	err = q.QueryRow(ctx, s.q(`SELECT job, status, owner FROM {S}.runs WHERE id = $1`), runID).Scan(&job, &status, &owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", "", fmt.Errorf("run %d not found", runID)
	}
	return job, status, owner, err
}

// touchJobSQL makes sure the job's row ($1) exists and stamps its update
// time ($2).
const touchJobSQL = `
	INSERT INTO {S}.jobs (name, created_at, updated_at) VALUES ($1, $2, $2)
	ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at`

// touchJob makes sure the job's row exists and stamps its update time.
func (s *Store) touchJob(ctx context.Context, tx pgx.Tx, job string, now time.Time) error {
	if _, err := tx.Exec(ctx, s.q(touchJobSQL), job, now); err != nil {
		return fmt.Errorf("save job %s: %w", job, err)
	}
	return nil
}

// Unfinished returns the job's latest run when it is unfinished, or nil.
func (s *Store) Unfinished(ctx context.Context, job string) (*contract.RunInfo, error) {
	r, err := s.latestRun(ctx, s.pool, job, "")
	if err != nil {
		return nil, s.wrap("job "+job, err)
	}
	if r == nil || !r.Unfinished() {
		return nil, nil
	}
	return r, nil
}

// StartRun records a new run of r.Job with status running, as the SQLite
// store does, in a transaction fenced by the job's lease.
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
	now := s.now().UTC()
	started := now
	if !r.StartedAt.IsZero() {
		started = r.StartedAt.UTC()
	}
	var id int64
	err := s.inJobTx(ctx, r.Job, func(tx pgx.Tx) error {
		if err := s.touchJob(ctx, tx, r.Job, now); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, s.q(`
			INSERT INTO {S}.runs (job, kind, status, started_at, checkpoint, last_pos,
				window_mark, max_mark, from_pos, to_pos, owner, number, identity, full_pass, live_before, refused_since)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
				(SELECT coalesce(max(number), 0) + 1 FROM {S}.runs WHERE job = $1), nullif($12, ''), $13, nullif($14, -1), $15)
			RETURNING id`),
			r.Job, kind, contract.RunRunning, started, r.Checkpoint, r.Last,
			r.Window, r.MaxMark, r.From, r.To, s.token, r.Identity, r.Full, r.LiveBefore, opt(r.RefusedSince)).Scan(&id)
		if err != nil {
			return fmt.Errorf("insert run: %w", err)
		}
		if kind == contract.KindRun && r.Identity != "" {
			if _, err := tx.Exec(ctx, s.q(`UPDATE {S}.jobs SET identity = $1 WHERE name = $2`), r.Identity, r.Job); err != nil {
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

// Reopen sets an unfinished run back to running, owned by this Store.
func (s *Store) Reopen(ctx context.Context, runID int64) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var job string
		err := tx.QueryRow(ctx, s.q(`SELECT job FROM {S}.runs WHERE id = $1`), runID).Scan(&job)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %d not found", runID)
		}
		if err != nil {
			return err
		}
		if err := s.fence(ctx, tx, job); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, s.q(`
			UPDATE {S}.runs SET status = $1, error = '', finished_at = NULL, owner = $2
			WHERE id = $3 AND status IN ('running', 'interrupted', 'failed', 'partial')`),
			contract.RunRunning, s.token, runID)
		if err != nil {
			return fmt.Errorf("update run: %w", err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		_, status, _, err := s.runStatus(ctx, tx, runID)
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

var finalStatuses = map[string]bool{
	contract.RunInterrupted: true,
	contract.RunFailed:      true,
	contract.RunPartial:     true,
	contract.RunCompleted:   true,
	contract.RunAbandoned:   true,
}

// FinishRun sets a run's final status, error and finish time, as the
// SQLite store does; a run another Store took over, or a lost lease,
// refuses with exit 4.
func (s *Store) FinishRun(ctx context.Context, runID int64, status, errMsg, hwm string) error {
	if !finalStatuses[status] {
		return s.wrap(fmt.Sprintf("finish run %d", runID), fmt.Errorf("invalid final status %q", status))
	}
	now := s.now().UTC()
	var job string
	err := s.inRunTx(ctx, runID, func(tx pgx.Tx) error {
		q := `UPDATE {S}.runs SET status = $1, error = $2, finished_at = $3
			WHERE id = $4 AND owner = $5 AND (status IN ('running', 'interrupted', 'failed', 'partial')
				OR status = 'completed' AND $1 = 'completed') RETURNING job`
		args := []any{status, clean(errMsg), now, runID, s.token}
		if status == contract.RunAbandoned {
			q = `UPDATE {S}.runs SET status = $1, error = $2, finished_at = $3
			WHERE id = $4 AND status IN ('running', 'interrupted', 'failed', 'partial') RETURNING job`
			args = args[:4]
		}
		err := tx.QueryRow(ctx, s.q(q), args...).Scan(&job)
		if errors.Is(err, pgx.ErrNoRows) {
			return s.notFinishable(ctx, tx, runID)
		}
		if err != nil {
			return fmt.Errorf("update run: %w", err)
		}
		if status != contract.RunCompleted || hwm == "" {
			return nil
		}
		if _, err := tx.Exec(ctx, s.q(`UPDATE {S}.jobs SET hwm = $1, updated_at = $2 WHERE name = $3`), hwm, now, job); err != nil {
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

// inRunTx is inJobTx for the job of run runID (an unknown run is fenced
// by no lease: the statement finds nothing and says so).
func (s *Store) inRunTx(ctx context.Context, runID int64, fn func(tx pgx.Tx) error) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var job string
		err := tx.QueryRow(ctx, s.q(`SELECT job FROM {S}.runs WHERE id = $1`), runID).Scan(&job)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if job != "" {
			if err := s.fence(ctx, tx, job); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}

// notFinishable explains why a run could not be finished.
func (s *Store) notFinishable(ctx context.Context, tx pgx.Tx, runID int64) error {
	_, status, owner, err := s.runStatus(ctx, tx, runID)
	if err != nil {
		return err
	}
	if owner != s.token {
		return takenOver(runID)
	}
	return fmt.Errorf("run %d is %s, it cannot be finished again", runID, status)
}

// takenOver is the error of a Store that tries to change a run another
// Store has reopened since: exit 4.
func takenOver(runID int64) error {
	return &contract.Error{
		Class: contract.Locked,
		Msg:   fmt.Sprintf("run %d was taken over by another process; this one stops without changing it", runID),
		Hint:  "two processes ran the same job; the other one continues the run",
		Err:   contract.ErrLocked,
	}
}

// Runs returns the job's latest n runs, newest first (n <= 0: all).
func (s *Store) Runs(ctx context.Context, job string, n int) ([]contract.RunInfo, error) {
	var limit any
	if n > 0 {
		limit = n
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT `+runColumns+` FROM {S}.runs WHERE job = $1 ORDER BY id DESC LIMIT $2`), job, limit)
	if err != nil {
		return nil, s.wrap("job "+job+": list runs", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (contract.RunInfo, error) {
		ri, err := scanRun(r)
		if err != nil {
			return contract.RunInfo{}, err
		}
		return *ri, nil
	})
	if err != nil {
		return nil, s.wrap("job "+job+": list runs", err)
	}
	return nilIfEmpty(out), nil
}

// nilIfEmpty returns nil for no rows, as the SQLite store does.
func nilIfEmpty[T any](v []T) []T {
	if len(v) == 0 {
		return nil
	}
	return v
}
