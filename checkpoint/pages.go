package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemsync/idemsync/checkpoint/keylist"
	"github.com/idemsync/idemsync/contract"
)

// CommitPage records a page whose rows the target has committed, all in one
// transaction: the page row (numbered after the run's last), the run's
// counters and the job's metrics counters, checkpoint (p.Next) and last position (p.Position), the run's
// max mark when p.MaxMark != "", the job's high-water mark when p.HWM != "",
// the target's progress marker when p.Marker != 0,
// its columns when p.Columns != nil, the dead letters (stamped with job, run
// and time; one without a Position gets the page's), the page's keys
// (p.Keys, read back by SeenKeys), and, when p.FinishedAt
// is set, the run's completion (and, for a full pass, its start as the
// job's last full pass).
//
// The run must belong to job, be running, and be owned by this Store (it
// started or reopened it); a run another Store took over returns an error
// wrapping contract.ErrLocked (exit 4). On any error (including a
// cancelled ctx) nothing is recorded and the checkpoint stays where it
// was; errors are *contract.Error (exit 1) naming the state file, except a
// context's error, which is returned wrapped as it is.
func (s *Store) CommitPage(ctx context.Context, job string, p *contract.PageCommit) error {
	op := "job " + job + ": commit page"
	if p == nil {
		return s.wrap(op, errors.New("no page given"))
	}
	if err := s.stillAtPath(); err != nil {
		return s.replaced(op, err)
	}
	now := s.stamp()
	var seq int64
	ps, err := s.pageStatements(ctx)
	if err != nil {
		return s.wrap(op, err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		x := ps.in(tx) // the page's statements, prepared once (stmts.go)
		res, err := x.ExecContext(ctx, updateRunSQL,
			p.Records, p.Inserted, p.Updated, p.Unchanged, p.Skipped, p.Deleted,
			p.Next, p.Position, p.MaxMark, p.MaxMark, p.RunID, job, contract.RunRunning, s.token)
		if err != nil {
			return fmt.Errorf("update run: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("update run: %w", err)
		} else if n != 1 {
			return s.notRunning(ctx, tx, p.RunID, job)
		}
		err = x.QueryRowContext(ctx, insertPageSQL,
			p.RunID, p.Position, p.Next, p.Records, p.Hash, now, p.Elapsed.Milliseconds(), keylist.Encode(p.Keys), p.RunID).Scan(&seq)
		if err != nil {
			return fmt.Errorf("insert page: %w", err)
		}
		if err := touchJob(ctx, x, job, now); err != nil {
			return err
		}
		if err := addCounters(ctx, x, job, 1, p.Inserted, p.Updated, p.Unchanged, p.Deleted, p.Skipped); err != nil {
			return err
		}
		if p.HWM != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET hwm = ? WHERE name = ?`, p.HWM, job); err != nil {
				return fmt.Errorf("save high-water mark: %w", err)
			}
		}
		if p.Marker != 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET target_marker = ? WHERE name = ?`, p.Marker, job); err != nil {
				return fmt.Errorf("save the target's progress marker: %w", err)
			}
		}
		if p.Columns != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET columns_json = ? WHERE name = ?`, p.Columns, job); err != nil {
				return fmt.Errorf("save columns: %w", err)
			}
		}
		if err := insertDead(ctx, tx, job, p, now); err != nil {
			return err
		}
		if err := insertSchemaChanges(ctx, tx, job, p, now); err != nil {
			return err
		}
		for name, c := range p.Children {
			if _, err := tx.ExecContext(ctx, addChildCountsSQL, p.RunID, name, c.Inserted, c.Deleted); err != nil {
				return fmt.Errorf("count child table %s: %w", name, err)
			}
		}
		if !p.FinishedAt.IsZero() {
			if err := completeRun(ctx, tx, job, p, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.wrap(op, err)
	}
	s.log.Debug("page checkpointed", "job", job, "run_id", p.RunID, "seq", seq,
		"records", p.Records, "dead", len(p.Dead), "completed", !p.FinishedAt.IsZero())
	return nil
}

// updateRunSQL counts a page into its run and moves its checkpoint, on
// condition that the run is running and this Store's (CommitPage).
const updateRunSQL = `
			UPDATE runs SET
				pages = pages + 1, records = records + ?,
				inserted = inserted + ?, updated = updated + ?,
				unchanged = unchanged + ?, skipped = skipped + ?, deleted = deleted + ?,
				checkpoint = ?, last_pos = ?,
				max_mark = CASE WHEN ? <> '' THEN ? ELSE max_mark END
			WHERE id = ? AND job = ? AND status = ? AND owner = ?`

// insertPageSQL records a page numbered after its run's last (CommitPage).
const insertPageSQL = `
			INSERT INTO pages (run_id, seq, position, next, records, hash, committed_at, elapsed_ms, keys)
			SELECT ?, coalesce(max(seq), 0) + 1, ?, ?, ?, ?, ?, ?, ? FROM pages WHERE run_id = ?
			RETURNING seq`

// addChildCountsSQL adds a page's rows of one child table to its run's
// (docs/job-file.md, "Child tables").
const addChildCountsSQL = `INSERT INTO run_children (run_id, tbl, inserted, deleted) VALUES (?, ?, ?, ?)
	ON CONFLICT (run_id, tbl) DO UPDATE SET inserted = inserted + excluded.inserted, deleted = deleted + excluded.deleted`

// notRunning explains why a page cannot be committed to runID.
func (s *Store) notRunning(ctx context.Context, tx *sql.Tx, runID int64, job string) error {
	runJob, status, err := runStatus(ctx, tx, runID)
	switch {
	case err != nil:
		return err
	case runJob != job:
		return fmt.Errorf("run %d belongs to job %s", runID, runJob)
	case status == contract.RunRunning:
		if err := s.ownedElsewhere(ctx, tx, runID); err != nil {
			return err
		}
	}
	return fmt.Errorf("run %d is %s, not running", runID, status)
}

// insertDead stores the page's dead letters. Their raw records are kept
// verbatim and never logged.
func insertDead(ctx context.Context, tx *sql.Tx, job string, p *contract.PageCommit, now string) error {
	if len(p.Dead) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `
		INSERT INTO dead_letters (job, run_id, position, idx, reason, raw, at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("insert dead letter: %w", err)
	}
	defer stmt.Close()
	for i, d := range p.Dead {
		pos := d.Position
		if pos == "" {
			pos = p.Position
		}
		if _, err := stmt.ExecContext(ctx, job, p.RunID, pos, d.Index, d.Reason, d.Raw, now); err != nil {
			return fmt.Errorf("insert dead letter %d of %d: %w", i+1, len(p.Dead), err)
		}
	}
	return nil
}

// Pages returns the committed pages of a run in commit order; none for an
// unknown run. Errors are *contract.Error (exit 1).
func (s *Store) Pages(ctx context.Context, runID int64) ([]contract.PageInfo, error) {
	op := fmt.Sprintf("run %d: list pages", runID)
	rows, err := s.db.QueryContext(ctx, `
		SELECT run_id, seq, position, next, records, hash, committed_at
		FROM pages WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var out []contract.PageInfo
	for rows.Next() {
		var pi contract.PageInfo
		var at sql.NullString
		if err := rows.Scan(&pi.RunID, &pi.Seq, &pi.Position, &pi.Next, &pi.Records, &pi.Hash, &at); err != nil {
			return nil, s.wrap(op, err)
		}
		if pi.CommittedAt, err = parseTime(at); err != nil {
			return nil, s.wrap(op, err)
		}
		out = append(out, pi)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// DeadLetters returns the job's dead letters, newest first; n <= 0 returns
// all of them. Errors are *contract.Error (exit 1).
func (s *Store) DeadLetters(ctx context.Context, job string, n int) ([]contract.DeadLetter, error) {
	op := "job " + job + ": list dead letters"
	if n <= 0 {
		n = -1 // SQLite: no limit
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT id, job, run_id, position, idx, reason, raw, at
		FROM dead_letters WHERE job = ? ORDER BY id DESC LIMIT ?`, job, n)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var out []contract.DeadLetter
	for rows.Next() {
		var d contract.DeadLetter
		var at sql.NullString
		if err := rows.Scan(&d.ID, &d.Job, &d.RunID, &d.Position, &d.Index, &d.Reason, &d.Raw, &at); err != nil {
			return nil, s.wrap(op, err)
		}
		if d.At, err = parseTime(at); err != nil {
			return nil, s.wrap(op, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// completeRun marks the run of p completed in the page's transaction and,
// when the run is a full pass, records it as the job's last one (as
// CompletePass does for a run that sweeps).
func completeRun(ctx context.Context, tx *sql.Tx, job string, p *contract.PageCommit, now string) error {
	var full bool
	var started string
	err := tx.QueryRowContext(ctx, `UPDATE runs SET status = ?, finished_at = ? WHERE id = ? RETURNING full, started_at`,
		contract.RunCompleted, formatTime(p.FinishedAt), p.RunID).Scan(&full, &started)
	if err != nil {
		return fmt.Errorf("complete run: %w", err)
	}
	if !full {
		return nil
	}
	return recordFullPass(ctx, tx, job, started, now)
}

// recordFullPass records a completed full pass begun at started as the
// job's last one, and that none is due.
func recordFullPass(ctx context.Context, tx *sql.Tx, job, started, now string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE jobs SET full_pass_at = ?, full_due = 0, updated_at = ? WHERE name = ?`,
		started, now, job); err != nil {
		return fmt.Errorf("save last full pass: %w", err)
	}
	return nil
}
