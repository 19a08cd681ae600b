package postgres

import (
	"context"
	"errors"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var _ contract.Progressor = (*Sink)(nil)

// progressName is the table of progress markers in a target schema
// (docs/guarantees.md, "Job identity"): per job and table, a counter each
// page raises in its own transaction.
const progressName = "_idemsync_progress"

// progressTable is the quoted progress table of t's schema.
func progressTable(t *contract.Table) string {
	return sqlkit.QuoteTable(&contract.Table{Schema: t.Schema, Name: progressName})
}

// raiseProgressSQL raises a marker, never lowering it.
func raiseProgressSQL(progress string) string {
	return `INSERT INTO ` + progress + ` AS m (job, table_name, marker) VALUES ($1, $2, $3)
		ON CONFLICT (job, table_name) DO UPDATE SET marker = greatest(m.marker, excluded.marker)`
}

// progressDDL creates the progress table named progress.
func progressDDL(progress string) string {
	return `CREATE TABLE IF NOT EXISTS ` + progress + ` (
		job text NOT NULL,
		table_name text NOT NULL,
		marker bigint NOT NULL,
		PRIMARY KEY (job, table_name))`
}

// makeProgress creates the progress table in tx when it is missing, under
// a savepoint, so that a concurrent creation (a unique violation on the
// catalog) does not abort the transaction. Only when missing: CREATE …
// IF NOT EXISTS needs the CREATE privilege on the schema even when the
// table exists; a user without it gets an error whose hint holds the
// statements to run once as a user who has it. Errors are final (op's).
func (p *Sink) makeProgress(ctx context.Context, tx pgx.Tx, op, progress string) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, progress).Scan(&exists); err != nil {
		return p.dbError(op, err)
	}
	if exists {
		return nil
	}
	if _, err := tx.Exec(ctx, `SAVEPOINT idemsync_progress`); err != nil {
		return p.dbError(op, err)
	}
	if _, err := tx.Exec(ctx, progressDDL(progress)); err != nil {
		if _, rerr := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT idemsync_progress`); rerr != nil {
			return p.dbError(op, rerr)
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			e := p.dbError(op, err)
			var ie *contract.Error
			if errors.As(e, &ie) {
				ie.Hint = "idemsync keeps each job's progress marker in " + progress + " (docs/guarantees.md, \"Progress markers\"); create it once as a user allowed to, and let " + p.user + " read and write it: " +
					strings.Join(strings.Fields(progressDDL(progress)), " ") + "; GRANT SELECT, INSERT, UPDATE ON " + progress + " TO " + sqlkit.QuoteIdent(p.user) + ";"
			}
			return e
		}
		return nil
	}
	if _, err := tx.Exec(ctx, `RELEASE SAVEPOINT idemsync_progress`); err != nil {
		return p.dbError(op, err)
	}
	return nil
}

// raiseProgress writes t.Progress in the page's transaction tx (nothing
// when it has no value) and returns the progress table it made sure of.
// Errors are final (op's).
func (p *Sink) raiseProgress(ctx context.Context, tx pgx.Tx, op string, t *contract.Table) (string, error) {
	if t.Progress.Value == 0 {
		return "", nil
	}
	progress := progressTable(t)
	if !p.progressed[progress] {
		if err := p.makeProgress(ctx, tx, op, progress); err != nil {
			return "", err
		}
	}
	if _, err := tx.Exec(ctx, raiseProgressSQL(progress), t.Progress.Job, t.Name, t.Progress.Value); err != nil {
		return "", p.dbError(op, err)
	}
	return progress, nil
}

// ReadProgress returns job's marker for t (see contract.Progressor). It
// reads only.
func (p *Sink) ReadProgress(ctx context.Context, t *contract.Table, job string) (int64, bool, error) {
	op := "read the progress marker of " + t.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.connect(ctx)
	if err != nil {
		return 0, false, err
	}
	progress := progressTable(t)
	var kept bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, progress).Scan(&kept); err != nil {
		return 0, false, p.dbError(op, err)
	}
	if !kept {
		return 0, false, nil
	}
	var v int64
	err = conn.QueryRow(ctx, `SELECT marker FROM `+progress+` WHERE job = $1 AND table_name = $2`, job, t.Name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, true, nil
	}
	if err != nil {
		return 0, true, p.dbError(op, err)
	}
	return v, true, nil
}

// AdoptProgress raises job's marker for t to value in a transaction of
// its own (see contract.Progressor).
func (p *Sink) AdoptProgress(ctx context.Context, t *contract.Table, job string, value int64) error {
	if err := sqlkit.CheckTableName(t, pgMaxIdent); err != nil {
		return err
	}
	op := "write the progress marker of " + t.String()
	progress := progressTable(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.inTx(ctx, op, commitTx, func(tx pgx.Tx) error {
		if err := p.makeProgress(ctx, tx, op, progress); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, raiseProgressSQL(progress), job, t.Name, value); err != nil {
			return p.dbError(op, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.progressed[progress] = true // only once committed
	return nil
}
