package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// Prepare makes sure the table exists with a unique key on t.Key and every
// column of t (see contract.Sink). It creates the table with
// PRIMARY KEY (key) when missing and t.Create is set, and adds missing
// columns with ALTER TABLE … ADD COLUMN, all in one transaction. It may be
// called again with more columns. Errors are *contract.Error: Invalid for
// invalid names or a schema other than "main"; Permanent when the table
// is missing and t.Create is unset, when a key column is missing, or when no
// unique index covers exactly the key columns (the Hint holds the
// CREATE UNIQUE INDEX statement that fixes it).
func (s *Sink) Prepare(ctx context.Context, t *contract.Table) error {
	if err := sqlkit.CheckTable(t, 0); err != nil {
		return err
	}
	if err := s.prepareChildren(ctx, t); err != nil { // children.go
		return err
	}
	if t.Schema != "" && !strings.EqualFold(t.Schema, "main") {
		return &contract.Error{
			Class: contract.Invalid,
			Msg:   fmt.Sprintf("table %s: sqlite targets have no schemas", t),
			Hint:  "name the table without a schema (table: " + t.Name + ")",
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropStatements() // the column set may change; statements are re-prepared lazily
	op := "prepare table " + t.String()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(op, err)
	}
	defer tx.Rollback()

	var kind string
	err = tx.QueryRowContext(ctx,
		`SELECT type FROM sqlite_schema WHERE name = ? COLLATE NOCASE AND type IN ('table', 'view')`,
		t.Name).Scan(&kind)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if !t.Create {
			return &contract.Error{
				Class: contract.Permanent,
				Msg:   fmt.Sprintf("table %s does not exist", t),
				Hint:  "set target.create: true or create the table with a unique key on (" + strings.Join(t.Key, ", ") + ")",
			}
		}
		if _, err := tx.ExecContext(ctx, sqliteCreate(t)); err != nil {
			return s.wrap(op, err)
		}
		s.logger.Info("created table", "table", t.String(), "key", t.Key)
	case err != nil:
		return s.wrap(op, err)
	case kind != "table":
		return contract.Errorf(contract.Permanent, "%s: %s is a %s, not a table", op, t, kind)
	default:
		if err := s.alter(ctx, tx, t); err != nil {
			return err
		}
	}
	if err := prepareFeed(ctx, tx, t); err != nil {
		if ce := (*contract.Error)(nil); errors.As(err, &ce) {
			return err // a feed of another job on the table
		}
		return s.wrap(op+": change feed", err)
	}
	if err := tx.Commit(); err != nil {
		return s.wrap(op, err)
	}
	return nil
}

// sqliteCreate returns the CREATE TABLE statement for t.
func sqliteCreate(t *contract.Table) string {
	var defs []string
	for _, c := range t.Columns {
		d := sqlkit.QuoteIdent(c.Name) + " " + sqliteType(c.Type)
		if sqlkit.IsKey(t, c.Name) {
			d += " NOT NULL" // SQLite's PRIMARY KEY alone allows NULLs
		}
		defs = append(defs, d)
	}
	defs = append(defs,
		sqlkit.QuoteIdent(contract.ColHash)+" TEXT",
		sqlkit.QuoteIdent(contract.ColSyncedAt)+" TEXT")
	if t.Soft() {
		defs = append(defs, sqlkit.QuoteIdent(contract.ColDeletedAt)+" TEXT")
	}
	defs = append(defs, "PRIMARY KEY ("+sqlkit.QuoteList(t.Key)+")")
	return "CREATE TABLE " + sqlkit.QuoteIdent(t.Name) + " (\n\t" + strings.Join(defs, ",\n\t") + "\n)"
}

// alter checks the unique key of an existing table and adds missing columns.
func (s *Sink) alter(ctx context.Context, tx *sql.Tx, t *contract.Table) error {
	op := "prepare table " + t.String()
	have := map[string]bool{}   // lower-cased: SQLite folds ASCII case in names
	decl := map[string]string{} // declared types, by lower-cased name
	var pk []string
	// table_xinfo, not table_info: it lists generated columns too (hidden 2
	// or 3), which idemsync cannot write.
	generated := map[string]string{}
	rows, err := tx.QueryContext(ctx, `SELECT name, type, pk, hidden FROM pragma_table_xinfo(?)`, t.Name)
	if err != nil {
		return s.wrap(op, err)
	}
	for rows.Next() {
		var name, typ string
		var pos, hidden int
		if err := rows.Scan(&name, &typ, &pos, &hidden); err != nil {
			rows.Close()
			return s.wrap(op, err)
		}
		if hidden == 2 || hidden == 3 {
			generated[sqlkit.ASCIILower(name)] = name
		}
		have[sqlkit.ASCIILower(name)], decl[sqlkit.ASCIILower(name)] = true, typ
		if pos > 0 {
			pk = append(pk, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.wrap(op, err)
	}
	for _, k := range t.Key {
		if !have[sqlkit.ASCIILower(k)] {
			return &contract.Error{
				Class: contract.Permanent,
				Msg:   fmt.Sprintf("table %s has no key column %q", t, k),
				Hint:  "add the column and a unique index on (" + strings.Join(t.Key, ", ") + "), or fix target.key",
			}
		}
	}
	for _, c := range t.Columns {
		if name, ok := generated[sqlkit.ASCIILower(c.Name)]; ok {
			return &contract.Error{
				Class: contract.Permanent,
				Msg:   fmt.Sprintf("%s: column %q is a generated column (AS …): idemsync writes it from the records", op, name),
				Hint:  "map the field to another column, or recreate the table with " + sqlkit.QuoteIdent(name) + " as a plain column",
			}
		}
	}
	unique, err := s.hasUniqueKey(ctx, tx, t, pk)
	if err != nil {
		return s.wrap(op, err)
	}
	if !unique {
		stmt := fmt.Sprintf("CREATE UNIQUE INDEX %s ON %s (%s);",
			sqlkit.QuoteIdent(t.Name+"_idemsync_key"), sqlkit.QuoteIdent(t.Name), sqlkit.QuoteList(t.Key))
		return &contract.Error{
			Class: contract.Permanent,
			Msg:   fmt.Sprintf("table %s has no unique index on exactly (%s)", t, strings.Join(t.Key, ", ")),
			Hint:  "remove duplicate keys, then run: " + stmt,
		}
	}
	if err := s.checkKeyCollation(ctx, tx, t); err != nil {
		return err
	}
	if err := s.checkConflictClauses(ctx, tx, t); err != nil { // conflict.go
		return err
	}
	if err := s.rewriteKeyForms(ctx, tx, t, decl); err != nil {
		return s.wrap(op, err)
	}
	cols := append([]contract.Column{}, t.Columns...)
	cols = append(cols,
		contract.Column{Name: contract.ColHash, Type: contract.TypeText},
		contract.Column{Name: contract.ColSyncedAt, Type: contract.TypeTimestamp})
	if t.Soft() {
		cols = append(cols, contract.Column{Name: contract.ColDeletedAt, Type: contract.TypeTimestamp})
	}
	for _, c := range cols {
		if have[sqlkit.ASCIILower(c.Name)] {
			continue
		}
		q := fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", sqlkit.QuoteIdent(t.Name), sqlkit.QuoteIdent(c.Name), sqliteType(c.Type))
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return s.wrap(op, err)
		}
		have[sqlkit.ASCIILower(c.Name)] = true
		s.logger.Info("added column", "table", t.String(), "column", c.Name, "type", string(c.Type))
	}
	return nil
}

// hasUniqueKey reports whether the primary key (pk, from table_info; an
// INTEGER PRIMARY KEY has no index of its own) or a full, non-partial unique
// index covers exactly the key columns.
func (s *Sink) hasUniqueKey(ctx context.Context, tx *sql.Tx, t *contract.Table, pk []string) (bool, error) {
	if sqlkit.SameSet(pk, t.Key, true) {
		return true, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT name FROM pragma_index_list(?) WHERE "unique" = 1 AND partial = 0`, t.Name)
	if err != nil {
		return false, err
	}
	var indexes []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return false, err
		}
		indexes = append(indexes, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	for _, idx := range indexes {
		var cols []string
		expr := false
		rows, err := tx.QueryContext(ctx, `SELECT name FROM pragma_index_info(?)`, idx)
		if err != nil {
			return false, err
		}
		for rows.Next() {
			var name sql.NullString
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return false, err
			}
			expr = expr || !name.Valid // an expression, not a column
			cols = append(cols, name.String)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, err
		}
		if !expr && sqlkit.SameSet(cols, t.Key, true) {
			return true, nil
		}
	}
	return false, nil
}

// checkKeyCollation refuses a table whose unique index on key columns
// compares a text key under a collation other than BINARY (a column
// declared COLLATE NOCASE, or an index on (id COLLATE RTRIM)): it holds
// keys idemsync keeps apart ("A" and "a") equal, so two records of the
// source would be one row, the second written over the first on every run
// (docs/job-file.md, "target").
func (s *Sink) checkKeyCollation(ctx context.Context, tx *sql.Tx, t *contract.Table) error {
	op := "prepare table " + t.String()
	var col, coll, idx string
	err := tx.QueryRowContext(ctx, `
		SELECT x.name, x.coll, l.name FROM pragma_index_list(?) l, pragma_index_xinfo(l.name) x
		WHERE l."unique" = 1 AND x.key = 1 AND x.name IS NOT NULL AND x.coll <> 'BINARY' COLLATE NOCASE
		  AND NOT EXISTS (SELECT 1 FROM pragma_index_xinfo(l.name) y WHERE y.key = 1 AND (y.name IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(?) k WHERE k.value = y.name COLLATE NOCASE)))
		LIMIT 1`, t.Name, keyNamesJSON(t)).Scan(&col, &coll, &idx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return s.wrap(op, err)
	}
	return &contract.Error{
		Class: contract.Permanent,
		Msg: fmt.Sprintf("%s: key column %q is compared COLLATE %s by unique index %s: it holds keys the source keeps apart (\"A\" and \"a\") equal, so two records would be one row, overwritten on every run",
			op, col, coll, idx),
		Hint: "recreate the table with the key column compared exactly (no COLLATE on it or its unique index), or map a key the source keeps unique",
	}
}

// keyNamesJSON is t's key columns as a JSON array, for checkKeyCollation.
func keyNamesJSON(t *contract.Table) string {
	b, _ := json.Marshal(t.Key)
	return string(b)
}
