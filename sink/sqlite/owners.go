package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

var _ contract.TableOwners = (*Sink)(nil)

// ownersTable records the writers of the file's tables (docs/deletions.md,
// "One writer per swept table"). Table names compare as SQLite compares
// them: without regard to ASCII case.
const ownersTable = `"_idemsync_owners"`

const ownersDDL = `CREATE TABLE IF NOT EXISTS ` + ownersTable + ` (
	table_name TEXT NOT NULL COLLATE NOCASE,
	job TEXT NOT NULL,
	state TEXT NOT NULL,
	deletes TEXT NOT NULL,
	since TEXT NOT NULL,
	PRIMARY KEY (table_name, job, state)
)`

// ClaimTable registers c.Writer for t (see contract.TableOwners), in one
// BEGIN IMMEDIATE transaction, so two writers claiming at once are
// serialised by the file's write lock. With c.Check it only reads, and
// reads nothing when no writer was ever registered.
func (s *Sink) ClaimTable(ctx context.Context, t *contract.Table, c contract.TableClaim) error {
	if err := sqlkit.CheckTableName(t, 0); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "register the writer of " + t.String()
	if c.Check {
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = '_idemsync_owners'`).Scan(&n); err != nil || n == 0 {
			return s.wrapNil(op, err)
		}
		others, err := readWriters(ctx, s.db, t.Name)
		if err != nil {
			return s.wrap(op, err)
		}
		return contract.CheckWriters(t, c.Writer, others)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(op, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, ownersDDL); err != nil {
		return s.wrap(op, err)
	}
	others, err := readWriters(ctx, tx, t.Name)
	if err != nil {
		return s.wrap(op, err)
	}
	w := c.Writer
	if c.TakeOver {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+ownersTable+` WHERE table_name = ? AND NOT (job = ? AND state = ?)`, t.Name, w.Job, w.State); err != nil {
			return s.wrap(op, err)
		}
	} else if err := contract.CheckWriters(t, w, others); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+ownersTable+` (table_name, job, state, deletes, since) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (table_name, job, state) DO UPDATE SET deletes = excluded.deletes`,
		t.Name, w.Job, w.State, deletesOf(w), time.Now().UTC().Format(time.RFC3339)); err != nil {
		return s.wrap(op, err)
	}
	return s.wrapNil(op, tx.Commit())
}

// wrapNil is wrap for an error that may be nil.
func (s *Sink) wrapNil(op string, err error) error {
	if err == nil {
		return nil
	}
	return s.wrap(op, err)
}

// deletesOf is w's deletes, keep when unset.
func deletesOf(w contract.Writer) string {
	if w.Deletes == "" {
		return contract.DeletesKeep
	}
	return w.Deletes
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readWriters returns the writers registered for table.
func readWriters(ctx context.Context, q querier, table string) ([]contract.Writer, error) {
	rows, err := q.QueryContext(ctx, `SELECT job, state, deletes, since FROM `+ownersTable+` WHERE table_name = ? ORDER BY since, job, state`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []contract.Writer
	for rows.Next() {
		var w contract.Writer
		if err := rows.Scan(&w.Job, &w.State, &w.Deletes, &w.Since); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}
