package pgstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemsync/idemsync/checkpoint/keylist"
	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// CommitPage records a page whose rows the target has committed, all in
// one transaction, as the SQLite store does; the transaction first renews
// the job's lease on condition of its token (fence), so a holder that lost
// it commits nothing (exit 4). The page's statements go to the database as
// one batch in one round trip, and PostgreSQL runs the statements of a
// batch (up to its one Sync) as one implicit transaction: a statement that
// fails rolls all of them back (docs/performance.md, "State in
// PostgreSQL").
func (s *Store) CommitPage(ctx context.Context, job string, p *contract.PageCommit) error {
	op := "job " + job + ": commit page"
	if p == nil {
		return s.wrap(op, errors.New("no page given"))
	}
	b, seq, err := s.pageBatch(job, p)
	if err != nil {
		return s.wrap(op, err)
	}
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	if err := ctx.Err(); err != nil {
		return s.wrap(op, fmt.Errorf("commit: %w", err))
	}
	sent := time.Now()
	if err := s.sendPage(ctx, s.pool, job, p, b); err != nil {
		return s.wrap(op, err)
	}
	s.renewed(job, sent)
	s.log.Debug("page checkpointed", "job", job, "run_id", p.RunID, "seq", *seq,
		"records", p.Records, "dead", len(p.Dead), "completed", !p.FinishedAt.IsZero())
	return nil
}

// batcher sends a batch: the pool (one implicit transaction) or an open
// transaction (the page's target transaction: CommitPageIn).
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// sendPage sends pageBatch's b through q. A run that is not this Store's
// running run is explained from a connection of its own: the transaction
// of a failed batch is aborted.
func (s *Store) sendPage(ctx context.Context, q batcher, job string, p *contract.PageCommit, b *pgx.Batch) error {
	err := q.SendBatch(ctx, b).Close()
	if errors.Is(err, errNotRunning) {
		return s.notRunning(context.WithoutCancel(ctx), p.RunID, job)
	}
	return err
}

// errNotRunning is the batch's finding that the page's run is not this
// Store's running run; notRunning says why.
var errNotRunning = errors.New("run not running")

// guarded makes a data-modifying statement fail when it changes no row: a
// division by zero (SQLSTATE 22012) aborts the batch's transaction, and
// refused says so to the caller.
func guarded(stmt string) string {
	return `WITH changed AS (` + stmt + ` RETURNING 1) SELECT 1 / count(*) FROM changed`
}

// refused reports whether err is a guarded statement's finding that it
// changed no row.
func refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22012" // division_by_zero
}

// pageBatch queues the statements that record p: the lease renewals
// (fence) first, then the run's checkpoint and counters, the page, the
// job's stamp, the metrics counters, the page's mark, columns and dead
// letters, and the run's completion on its last page. A renewal or run
// update that matches no row fails the batch, and nothing of it commits.
// The page's seq is set once the batch is read.
func (s *Store) pageBatch(job string, p *contract.PageCommit) (*pgx.Batch, *int64, error) {
	now := s.now().UTC()
	b := &pgx.Batch{}
	if err := s.queueFence(b, job); err != nil {
		return nil, nil, err
	}
	b.Queue(s.q(guarded(`
		UPDATE {S}.runs SET
			pages = pages + 1, records = records + $1,
			inserted = inserted + $2, updated = updated + $3,
			unchanged = unchanged + $4, skipped = skipped + $5, deleted = deleted + $6,
			checkpoint = $7, last_pos = $8,
			max_mark = CASE WHEN $9 <> '' THEN $9 ELSE max_mark END
		WHERE id = $10 AND job = $11 AND status = 'running' AND owner = $12`)),
		p.Records, p.Inserted, p.Updated, p.Unchanged, p.Skipped, p.Deleted,
		p.Next, p.Position, p.MaxMark, p.RunID, job, s.token).Fn = func(br pgx.BatchResults) error {
		_, err := br.Exec()
		switch {
		case refused(err):
			return errNotRunning
		case err != nil:
			return fmt.Errorf("update run: %w", err)
		}
		return nil
	}
	seq := new(int64)
	b.Queue(s.q(`
		INSERT INTO {S}.pages (run_id, seq, position, next, records, hash, committed_at, elapsed_ms, keys)
		SELECT $1, coalesce(max(seq), 0) + 1, $2, $3, $4, $5, $6, $7, $8 FROM {S}.pages WHERE run_id = $1
		RETURNING seq`),
		p.RunID, p.Position, p.Next, p.Records, p.Hash, now, p.Elapsed.Milliseconds(), keylist.Encode(p.Keys)).QueryRow(func(r pgx.Row) error {
		if err := r.Scan(seq); err != nil {
			return fmt.Errorf("insert page: %w", err)
		}
		return nil
	})
	named(b.Queue(s.q(touchJobSQL), job, now), "save job "+job)
	named(b.Queue(s.q(addCountersSQL), counterArgs(job, 1, p.Inserted, p.Updated, p.Unchanged, p.Deleted, p.Skipped)...), "count metrics")
	if p.HWM != "" {
		named(b.Queue(s.q(`UPDATE {S}.jobs SET hwm = $1 WHERE name = $2`), p.HWM, job), "save high-water mark")
	}
	if p.Marker != 0 {
		named(b.Queue(s.q(`UPDATE {S}.jobs SET target_marker = $1 WHERE name = $2`), p.Marker, job), "save the target's progress marker")
	}
	if p.Columns != "" {
		named(b.Queue(s.q(`UPDATE {S}.jobs SET columns_json = $1 WHERE name = $2`), p.Columns, job), "save columns")
	}
	for i, d := range p.Dead {
		pos := d.Position
		if pos == "" {
			pos = p.Position
		}
		named(b.Queue(s.q(`INSERT INTO {S}.dead_letters (job, run_id, position, idx, reason, raw, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`), job, p.RunID, pos, d.Index, clean(d.Reason), []byte(d.Raw), now),
			fmt.Sprintf("insert dead letter %d of %d", i+1, len(p.Dead)))
	}
	s.queueSchemaChanges(b, job, p, now)
	for name, c := range p.Children { // docs/job-file.md, "Child tables"
		named(b.Queue(s.q(`INSERT INTO {S}.run_children AS c (run_id, tbl, inserted, deleted) VALUES ($1, $2, $3, $4)
			ON CONFLICT (run_id, tbl) DO UPDATE SET inserted = c.inserted + excluded.inserted, deleted = c.deleted + excluded.deleted`),
			p.RunID, name, c.Inserted, c.Deleted), "count child table "+name)
	}
	if !p.FinishedAt.IsZero() {
		// The run completes; a full pass is the job's last one, and none
		// is due (recordFullPass).
		named(b.Queue(s.q(`WITH r AS (UPDATE {S}.runs SET status = 'completed', finished_at = $1 WHERE id = $2
				RETURNING full_pass, started_at)
			UPDATE {S}.jobs j SET full_pass_at = r.started_at, full_due = false, updated_at = $3
			FROM r WHERE j.name = $4 AND r.full_pass`), p.FinishedAt.UTC(), p.RunID, now, job), "complete run")
	}
	return b, seq, nil
}

// named makes a batched statement's failure name what it did.
func named(q *pgx.QueuedQuery, what string) {
	q.Fn = func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
}

// notRunning explains why a page cannot be committed to runID.
func (s *Store) notRunning(ctx context.Context, runID int64, job string) error {
	runJob, status, owner, err := s.runStatus(ctx, s.pool, runID)
	switch {
	case err != nil:
		return err
	case runJob != job:
		return fmt.Errorf("run %d belongs to job %s", runID, runJob)
	case status == contract.RunRunning && owner != s.token:
		return takenOver(runID)
	}
	return fmt.Errorf("run %d is %s, not running", runID, status)
}

// recordFullPass records a completed full pass begun at started as the
// job's last one, and that none is due.
func (s *Store) recordFullPass(ctx context.Context, tx pgx.Tx, job string, started, now time.Time) error {
	if _, err := tx.Exec(ctx, s.q(`UPDATE {S}.jobs SET full_pass_at = $1, full_due = false, updated_at = $2 WHERE name = $3`),
		started, now, job); err != nil {
		return fmt.Errorf("save last full pass: %w", err)
	}
	return nil
}

// Pages returns the committed pages of a run in commit order.
func (s *Store) Pages(ctx context.Context, runID int64) ([]contract.PageInfo, error) {
	rows, err := s.pool.Query(ctx, s.q(`SELECT run_id, seq, position, next, records, hash, committed_at
		FROM {S}.pages WHERE run_id = $1 ORDER BY seq`), runID)
	if err == nil {
		var out []contract.PageInfo
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (contract.PageInfo, error) {
			var pi contract.PageInfo
			err := r.Scan(&pi.RunID, &pi.Seq, &pi.Position, &pi.Next, &pi.Records, &pi.Hash, &pi.CommittedAt)
			pi.CommittedAt = pi.CommittedAt.UTC()
			return pi, err
		})
		if err == nil {
			return nilIfEmpty(out), nil
		}
	}
	return nil, s.wrap(fmt.Sprintf("run %d: list pages", runID), err)
}

// DeadLetters returns the job's dead letters, newest first (n <= 0: all).
func (s *Store) DeadLetters(ctx context.Context, job string, n int) ([]contract.DeadLetter, error) {
	var limit any
	if n > 0 {
		limit = n
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT id, job, run_id, position, idx, reason, raw, at
		FROM {S}.dead_letters WHERE job = $1 ORDER BY id DESC LIMIT $2`), job, limit)
	if err == nil {
		var out []contract.DeadLetter
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (contract.DeadLetter, error) {
			var d contract.DeadLetter
			var raw []byte
			err := r.Scan(&d.ID, &d.Job, &d.RunID, &d.Position, &d.Index, &d.Reason, &raw, &d.At)
			d.Raw, d.At = string(raw), d.At.UTC()
			return d, err
		})
		if err == nil {
			return nilIfEmpty(out), nil
		}
	}
	return nil, s.wrap("job "+job+": list dead letters", err)
}

// SeenKeys calls fn with the key of every row of every page committed to
// runID, in page order; complete is false when a page was committed
// without its keys.
func (s *Store) SeenKeys(ctx context.Context, runID int64, fn func(key string) error) (complete bool, err error) {
	op := fmt.Sprintf("run %d: read seen keys", runID)
	rows, err := s.pool.Query(ctx, s.q(`SELECT seq, keys FROM {S}.pages WHERE run_id = $1 ORDER BY seq`), runID)
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
