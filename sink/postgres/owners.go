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

var _ contract.TableOwners = (*Sink)(nil)

// ownersName is the table recording the writers of the tables of its
// schema (docs/deletions.md, "One writer per swept table"): one per
// schema, beside the tables it describes.
const ownersName = "_idemsync_owners"

// ClaimTable registers c.Writer for t (see contract.TableOwners) in the
// owners table of t's schema (when t names none, the schema of the table
// its name finds on the search_path, or the current schema), in
// one transaction under an advisory lock, so two writers claiming at once
// are serialised. With c.Check it only reads, and reads nothing when no
// writer was ever registered in the schema.
func (p *Sink) ClaimTable(ctx context.Context, t *contract.Table, c contract.TableClaim) error {
	// The name only: a job without target.columns has none until its
	// first page is read.
	if err := sqlkit.CheckTableName(t, pgMaxIdent); err != nil {
		return err
	}
	op := "register the writer of " + t.String()
	end := commitTx
	if c.Check {
		end = rollbackTx // it only reads
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inTx(ctx, op, end, func(tx pgx.Tx) error { return p.claimTable(ctx, tx, op, t, c) })
}

// claimTable is ClaimTable in its transaction tx.
func (p *Sink) claimTable(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, c contract.TableClaim) error {
	schema := t.Schema
	if schema == "" {
		// The schema of the table the name finds on the search_path, which
		// need not be the current schema (its first existing one): a job
		// naming the table with its schema must meet the same owners. The
		// current schema for a table not created yet: where it will be.
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.oid = to_regclass($1)), current_schema())`, sqlkit.QuoteTable(t)).Scan(&schema); err != nil {
			return p.dbError(op, err)
		}
	}
	owners := sqlkit.QuoteTable(&contract.Table{Schema: schema, Name: ownersName})
	if !c.Check {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('idemsync.owners:' || $1, 0))`, schema); err != nil {
			return p.dbError(op, err)
		}
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, owners).Scan(&exists); err != nil {
		return p.dbError(op, err)
	}
	switch {
	case !exists && c.Check:
		return nil
	case !exists:
		// Only when missing: CREATE … IF NOT EXISTS needs the CREATE
		// privilege on the schema even when the table exists.
		if _, err := tx.Exec(ctx, ownersDDL(owners)); err != nil {
			return p.ownersError(op, err, schema, owners, c.Writer)
		}
	}
	others, err := pgWriters(ctx, tx, owners, t.Name)
	if err != nil {
		return p.dbError(op, err)
	}
	w := c.Writer
	switch {
	case c.Check:
		return contract.CheckWriters(t, w, others)
	case c.TakeOver:
		if _, err := tx.Exec(ctx, `DELETE FROM `+owners+` WHERE table_name = $1 AND NOT (job = $2 AND state = $3)`, t.Name, w.Job, w.State); err != nil {
			return p.dbError(op, err)
		}
	default:
		if err := contract.CheckWriters(t, w, others); err != nil {
			return err
		}
	}
	deletes := w.Deletes
	if deletes == "" {
		deletes = contract.DeletesKeep
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+owners+` (table_name, job, state, deletes) VALUES ($1, $2, $3, $4)
		ON CONFLICT (table_name, job, state) DO UPDATE SET deletes = excluded.deletes`, t.Name, w.Job, w.State, deletes); err != nil {
		return p.dbError(op, err)
	}
	return nil
}

// ownersDDL creates the owners table named owners.
func ownersDDL(owners string) string {
	return `CREATE TABLE ` + owners + ` (
	table_name text NOT NULL,
	job text NOT NULL,
	state text NOT NULL,
	deletes text NOT NULL,
	since timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (table_name, job, state))`
}

// ownersError is the error of a failed creation of the owners table, with
// a hint for a missing schema or a missing privilege (the statement to run
// once as a user who has it).
func (p *Sink) ownersError(op string, err error, schema, owners string, w contract.Writer) error {
	e := p.dbError(op, err)
	var pgErr *pgconn.PgError
	var ie *contract.Error
	if errors.As(err, &pgErr) && errors.As(e, &ie) {
		switch pgErr.Code {
		case "3F000":
			ie.Hint = "create the schema first: CREATE SCHEMA " + sqlkit.QuoteIdent(schema) + ";"
		case "42501":
			ie.Hint = "idemsync records the writers of a table in " + owners + " (docs/deletions.md); create it once as a user allowed to, and let " + p.user + " read and write it: " +
				strings.Join(strings.Fields(ownersDDL(owners)), " ") + "; GRANT SELECT, INSERT, UPDATE, DELETE ON " + owners + " TO " + sqlkit.QuoteIdent(p.user) + ";"
		}
	}
	return e
}

// nilOr is dbError for an error that may be nil.
func (p *Sink) nilOr(op string, err error) error {
	if err == nil {
		return nil
	}
	return p.dbError(op, err)
}

// pgWriters returns the writers registered in owners for table.
func pgWriters(ctx context.Context, tx pgx.Tx, owners, table string) ([]contract.Writer, error) {
	rows, err := tx.Query(ctx, `SELECT job, state, deletes, to_char(since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
		FROM `+owners+` WHERE table_name = $1 ORDER BY since, job, state`, table)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (contract.Writer, error) {
		var w contract.Writer
		err := r.Scan(&w.Job, &w.State, &w.Deletes, &w.Since)
		return w, err
	})
}
