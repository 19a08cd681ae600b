package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

var _ contract.Progressor = (*Sink)(nil)

// progressTable holds the progress marker of each job and table of the
// file (docs/guarantees.md, "Job identity"): a counter each page raises in
// its own transaction. Table names compare as SQLite compares them.
const progressTable = `"_idemsync_progress"`

const progressDDL = `CREATE TABLE IF NOT EXISTS ` + progressTable + ` (
	job TEXT NOT NULL,
	table_name TEXT NOT NULL COLLATE NOCASE,
	marker INTEGER NOT NULL,
	PRIMARY KEY (job, table_name)
)`

// raiseProgressSQL raises a marker, never lowering it.
const raiseProgressSQL = `INSERT INTO ` + progressTable + ` (job, table_name, marker) VALUES (?, ?, ?)
	ON CONFLICT (job, table_name) DO UPDATE SET marker = max(marker, excluded.marker)`

// raiseProgress writes t.Progress in the page's transaction tx (nothing
// when it has no value), creating the table the first time.
func (s *Sink) raiseProgress(ctx context.Context, tx *sql.Tx, t *contract.Table) error {
	p := t.Progress
	if p.Value == 0 {
		return nil
	}
	if !s.progress {
		if _, err := tx.ExecContext(ctx, progressDDL); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, raiseProgressSQL, p.Job, t.Name, p.Value)
	return err
}

// ReadProgress returns job's marker for t (see contract.Progressor). It
// reads only.
func (s *Sink) ReadProgress(ctx context.Context, t *contract.Table, job string) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "read the progress marker of " + t.String()
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = '_idemsync_progress' AND type = 'table'`).Scan(&n); err != nil {
		return 0, false, s.wrap(op, err)
	}
	if n == 0 {
		return 0, false, nil
	}
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT marker FROM `+progressTable+` WHERE job = ? AND table_name = ?`, job, t.Name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, true, nil
	}
	if err != nil {
		return 0, true, s.wrap(op, err)
	}
	return v, true, nil
}

// AdoptProgress raises job's marker for t to value in a transaction of
// its own (see contract.Progressor).
func (s *Sink) AdoptProgress(ctx context.Context, t *contract.Table, job string, value int64) error {
	if err := sqlkit.CheckTableName(t, 0); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "write the progress marker of " + t.String()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(op, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, progressDDL); err != nil {
		return s.wrap(op, err)
	}
	if _, err := tx.ExecContext(ctx, raiseProgressSQL, job, t.Name, value); err != nil {
		return s.wrap(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.wrap(op, err)
	}
	s.progress = true
	return nil
}
