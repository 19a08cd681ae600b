package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgMaxIdent is PostgreSQL's identifier limit (NAMEDATALEN-1 bytes); longer
// names would be truncated silently, so they are rejected.
const pgMaxIdent = 63

// Prepare makes sure the table exists with a unique key on t.Key and every
// column of t (see contract.Sink), in one transaction. It creates the table
// with PRIMARY KEY (key) when missing and t.Create is set (the schema must
// exist), and adds missing columns with ALTER TABLE … ADD COLUMN IF NOT
// EXISTS. It may be called again with more columns. Errors are
// *contract.Error: Invalid for invalid names (empty, NUL, longer than 63
// bytes); Permanent when the table is missing and t.Create is unset,
// when a key column is missing, or when no unique constraint or index covers
// exactly the key columns (the Hint holds the ALTER TABLE … ADD UNIQUE
// statement that fixes it); database errors as described for Upsert.
func (p *Sink) Prepare(ctx context.Context, t *contract.Table) error {
	if err := sqlkit.CheckTable(t, pgMaxIdent); err != nil {
		return err
	}
	if err := p.prepareChildren(ctx, t); err != nil { // children.go
		return err
	}
	op := "prepare table " + t.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.types, p.triggers, p.rechecked, p.own, p.plain = nil, nil, nil, nil, nil // columns, triggers and rows may change
	return p.inTx(ctx, op, commitTx, func(tx pgx.Tx) error { return p.prepare(ctx, tx, op, t) })
}

// prepare is Prepare in its transaction tx.
func (p *Sink) prepare(ctx context.Context, tx pgx.Tx, op string, t *contract.Table) error {
	// Parallel first runs would race CREATE TABLE IF NOT EXISTS on the
	// catalog (a duplicate pg_type row): one transaction at a time looks
	// the table up and creates it. The lock is released at commit.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, prepareLockKey(t)); err != nil {
		return p.dbError(op, err)
	}

	var oid uint32
	var kind string
	err := tx.QueryRow(ctx,
		`SELECT c.oid, c.relkind::text FROM pg_class c WHERE c.oid = to_regclass($1)`,
		sqlkit.QuoteTable(t)).Scan(&oid, &kind)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if !t.Create {
			return &contract.Error{
				Class: contract.Permanent,
				Msg:   fmt.Sprintf("table %s does not exist", t),
				Hint:  "set target.create: true or create the table with a unique key on (" + strings.Join(t.Key, ", ") + ")",
			}
		}
		if _, err := tx.Exec(ctx, pgCreate(t)); err != nil {
			e := p.dbError(op, err)
			var pgErr *pgconn.PgError
			var ie *contract.Error
			if errors.As(err, &pgErr) && pgErr.Code == "3F000" && errors.As(e, &ie) {
				ie.Hint = "create the schema first: CREATE SCHEMA " + sqlkit.QuoteIdent(t.Schema) + ";"
			}
			return e
		}
		p.logger.Info("created table", "table", t.String(), "key", t.Key)
	case err != nil:
		return p.dbError(op, err)
	case kind == "p":
		// The merge tells inserts from updates by RETURNING xmax, a system
		// column PostgreSQL returns from no partitioned table: the first
		// load (COPY) went in and every later page failed with 0A000
		// (docs/job-file.md, "target").
		return &contract.Error{Class: contract.Permanent,
			Msg:  fmt.Sprintf("%s: %s is a partitioned table: idemsync writes only plain tables (PostgreSQL returns no system column from a partitioned one, which the merge needs)", op, t),
			Hint: "write to a plain table, or to one partition as target.table once the partitioned table has the columns idemsync adds (" + strings.Join(idemsyncColumns(t), ", ") + "): a partition takes none of its own"}
	case kind != "r":
		return contract.Errorf(contract.Permanent, "%s: %s is not a table (relkind %s)", op, t, kind)
	default:
		if err := p.alter(ctx, tx, t, oid); err != nil {
			return err
		}
	}
	if err := prepareFeed(ctx, tx, t, oid); err != nil {
		if ce := (*contract.Error)(nil); errors.As(err, &ce) {
			return err // a feed of another job on the table (sharedFeed)
		}
		return p.dbError(op+": change feed", err)
	}
	// Whether a trigger may keep rows out (dropped.go), asked here rather
	// than in the first page's transaction.
	if _, err := p.keepsOut(ctx, tx, t); err != nil {
		return p.dbError(op, err)
	}
	return nil
}

// prepareLockKey is the advisory lock key text of Prepare for t.
func prepareLockKey(t *contract.Table) string {
	return "idemsync.prepare:" + sqlkit.QuoteTable(t)
}

// pgCreate returns the CREATE TABLE statement for t.
func pgCreate(t *contract.Table) string {
	var defs []string
	for _, c := range t.Columns {
		defs = append(defs, sqlkit.QuoteIdent(c.Name)+" "+pgType(c.Type))
	}
	defs = append(defs,
		sqlkit.QuoteIdent(contract.ColHash)+" text",
		sqlkit.QuoteIdent(contract.ColSyncedAt)+" timestamptz")
	if t.Soft() {
		defs = append(defs, sqlkit.QuoteIdent(contract.ColDeletedAt)+" timestamptz")
	}
	defs = append(defs, "PRIMARY KEY ("+sqlkit.QuoteList(t.Key)+")")
	return "CREATE TABLE IF NOT EXISTS " + sqlkit.QuoteTable(t) + " (\n\t" + strings.Join(defs, ",\n\t") + "\n)"
}

// alter checks the unique key of an existing table and adds missing columns.
func (p *Sink) alter(ctx context.Context, tx pgx.Tx, t *contract.Table, oid uint32) error {
	op := "prepare table " + t.String()
	rows, err := tx.Query(ctx,
		`SELECT attname::text FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`, oid)
	if err != nil {
		return p.dbError(op, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return p.dbError(op, err)
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	for _, k := range t.Key {
		if !have[k] {
			return &contract.Error{
				Class: contract.Permanent,
				Msg:   fmt.Sprintf("table %s has no key column %q", t, k),
				Hint:  "add the column and a unique constraint on (" + strings.Join(t.Key, ", ") + "), or fix target.key",
			}
		}
	}
	// Full (non-partial, non-expression) unique indexes, key columns only
	// (INCLUDE columns excluded). ON CONFLICT (key) can infer any of them.
	rows, err = tx.Query(ctx, `
		SELECT array_agg(a.attname::text ORDER BY k.n)
		FROM pg_index i
		CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = $1 AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
		  AND k.n <= i.indnkeyatts
		GROUP BY i.indexrelid`, oid)
	if err != nil {
		return p.dbError(op, err)
	}
	indexes, err := pgx.CollectRows(rows, pgx.RowTo[[]string])
	if err != nil {
		return p.dbError(op, err)
	}
	unique := false
	for _, cols := range indexes {
		unique = unique || sqlkit.SameSet(cols, t.Key, false)
	}
	if !unique {
		stmt := fmt.Sprintf("ALTER TABLE %s ADD UNIQUE (%s);", sqlkit.QuoteTable(t), sqlkit.QuoteList(t.Key))
		return &contract.Error{
			Class: contract.Permanent,
			Msg:   fmt.Sprintf("table %s has no unique constraint on exactly (%s)", t, strings.Join(t.Key, ", ")),
			Hint:  "remove duplicate keys, then run: " + stmt,
		}
	}
	if err := p.checkKeyCollation(ctx, tx, t, oid); err != nil {
		return err
	}
	if err := p.checkRules(ctx, tx, t, oid); err != nil {
		return err
	}
	if err := p.checkRowSecurity(ctx, tx, t, oid); err != nil {
		return err
	}
	cols := append([]contract.Column{}, t.Columns...)
	cols = append(cols,
		contract.Column{Name: contract.ColHash, Type: contract.TypeText},
		contract.Column{Name: contract.ColSyncedAt, Type: contract.TypeTimestamp})
	if t.Soft() {
		cols = append(cols, contract.Column{Name: contract.ColDeletedAt, Type: contract.TypeTimestamp})
	}
	for _, c := range cols {
		if have[c.Name] {
			continue
		}
		q := fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s", sqlkit.QuoteTable(t), sqlkit.QuoteIdent(c.Name), pgType(c.Type))
		if _, err := tx.Exec(ctx, q); err != nil {
			return p.dbError(op, err)
		}
		have[c.Name] = true
		p.logger.Info("added column", "table", t.String(), "column", c.Name, "type", string(c.Type))
	}
	return nil
}

// checkKeyCollation refuses a table whose unique index on key columns
// compares a key case-insensitively: a column of type citext (or a domain
// over it) or a nondeterministic collation, the column's or the index's.
// It holds keys idemsync keeps apart ('A' and 'a') equal, so two records of
// the source would be one row, the second written over the first on every
// run (docs/job-file.md, "target").
func (p *Sink) checkKeyCollation(ctx context.Context, tx pgx.Tx, t *contract.Table, oid uint32) error {
	var col, how, idx string
	err := tx.QueryRow(ctx, `
		SELECT a.attname::text,
		       CASE WHEN co.collisdeterministic = false THEN 'collation ' || quote_ident(co.collname) ELSE 'type citext' END,
		       i.indexrelid::regclass::text
		FROM pg_index i
		CROSS JOIN LATERAL unnest(i.indkey::int2[], i.indcollation::oid[]) WITH ORDINALITY AS k(attnum, coll, n)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		JOIN pg_type ty ON ty.oid = a.atttypid
		LEFT JOIN pg_type base ON base.oid = ty.typbasetype
		LEFT JOIN pg_collation co ON co.oid = k.coll
		WHERE i.indrelid = $1 AND i.indisunique AND k.n <= i.indnkeyatts
		  AND (co.collisdeterministic = false OR ty.typname = 'citext' OR base.typname = 'citext')
		  AND NOT EXISTS (SELECT 1 FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS o(attnum, n)
		                  LEFT JOIN pg_attribute b ON b.attrelid = i.indrelid AND b.attnum = o.attnum
		                  WHERE o.n <= i.indnkeyatts AND (b.attname IS NULL OR NOT b.attname = ANY($2)))
		LIMIT 1`, oid, t.Key).Scan(&col, &how, &idx)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return p.dbError("prepare table "+t.String(), err)
	}
	return &contract.Error{
		Class: contract.Permanent,
		Msg: fmt.Sprintf("prepare table %s: key column %q is compared under %s by unique index %s: it holds keys the source keeps apart ('A' and 'a') equal, so two records would be one row, overwritten on every run",
			t, col, how, idx),
		Hint: fmt.Sprintf("make the key compare exactly (ALTER TABLE %s ALTER COLUMN %s TYPE text COLLATE \"C\", and no COLLATE on its unique index), or map a key the source keeps unique",
			sqlkit.QuoteTable(t), sqlkit.QuoteIdent(col)),
	}
}

// checkRules refuses a table with a RULE that rewrites what idemsync sends:
// any ON INSERT or ON UPDATE rule (PostgreSQL refuses INSERT … ON CONFLICT
// on such a table, failing every page), and, with deletes: hard, an ON
// DELETE … DO INSTEAD rule, which would turn the sweep's and tombstones'
// DELETE into something else, leaving removed records live on every run
// (docs/job-file.md, "target").
func (p *Sink) checkRules(ctx context.Context, tx pgx.Tx, t *contract.Table, oid uint32) error {
	var name, event string
	err := tx.QueryRow(ctx, `
		SELECT rulename::text, CASE ev_type WHEN '2' THEN 'UPDATE' WHEN '3' THEN 'INSERT' ELSE 'DELETE' END
		FROM pg_rewrite
		WHERE ev_class = $1 AND rulename <> '_RETURN'
		  AND (ev_type IN ('2', '3') OR (ev_type = '4' AND is_instead AND $2))
		ORDER BY rulename LIMIT 1`, oid, t.Deletes == contract.DeletesHard).Scan(&name, &event)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return p.dbError("prepare table "+t.String(), err)
	}
	return &contract.Error{
		Class: contract.Permanent,
		Msg: fmt.Sprintf("prepare table %s: rule %s ON %s rewrites the rows idemsync writes or deletes, so the table would not follow the source",
			t, sqlkit.QuoteIdent(name), event),
		Hint: fmt.Sprintf("drop it (DROP RULE %s ON %s;) and use a trigger instead", sqlkit.QuoteIdent(name), sqlkit.QuoteTable(t)),
	}
}

// checkRowSecurity refuses a table whose row security applies to the
// job's role (enabled, and the role neither a superuser, nor BYPASSRLS,
// nor the owner unless FORCE: row_security_active). A policy that hides
// rows hides them from every statement the job sends: the unchanged
// check counts a hidden row's record unchanged, the sweep and the
// tombstones never see it to remove, --verify never compares it, and the
// run exits 0 with the table holding a row the source no longer lists
// (docs/job-file.md, "target").
func (p *Sink) checkRowSecurity(ctx context.Context, tx pgx.Tx, t *contract.Table, oid uint32) error {
	var active bool
	var role string
	if err := tx.QueryRow(ctx, `SELECT row_security_active($1::oid), current_user::text`, oid).Scan(&active, &role); err != nil {
		return p.dbError("prepare table "+t.String(), err)
	}
	if !active {
		return nil
	}
	return &contract.Error{
		Class: contract.Permanent,
		Msg: fmt.Sprintf("prepare table %s: row security applies to role %s on it: a policy can hide rows from the job, which would then neither compare, update nor delete them, so the table would not follow the source",
			t, role),
		Hint: fmt.Sprintf("run the job as a role row security does not apply to (the table's owner, with no FORCE ROW LEVEL SECURITY, or a role with BYPASSRLS: ALTER ROLE %s BYPASSRLS;), or disable it (ALTER TABLE %s DISABLE ROW LEVEL SECURITY;)",
			sqlkit.QuoteIdent(role), sqlkit.QuoteTable(t)),
	}
}

// idemsyncColumns are the columns idemsync adds to t, with their types.
func idemsyncColumns(t *contract.Table) []string {
	cols := []string{contract.ColHash + " text", contract.ColSyncedAt + " timestamptz"}
	if t.Soft() {
		cols = append(cols, contract.ColDeletedAt+" timestamptz")
	}
	return cols
}
