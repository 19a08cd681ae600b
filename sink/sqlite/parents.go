package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

var _ contract.ParentReader = (*Sink)(nil)

// ParentRows implements contract.ParentReader: cols of the rows of t that f
// keeps (not those marked deleted, whatever t.Deletes says now), as text, by key. Synced-at times are compared as times
// (julianday); key bounds get the column's type affinity.
func (s *Sink) ParentRows(ctx context.Context, t *contract.Table, cols []string, f contract.ParentFilter) ([][]*string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "read parent rows of " + t.String()
	table := sqlkit.QuoteTable(t)
	probe, err := s.db.QueryContext(ctx, "SELECT * FROM "+table+" LIMIT 0")
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, sqlkit.MissingTable(t)
		}
		return nil, s.wrap(op, err)
	}
	all, err := probe.Columns()
	probe.Close()
	if err != nil {
		return nil, s.wrap(op, err)
	}
	for _, c := range cols {
		if !slices.ContainsFunc(all, func(a string) bool { return sqlkit.ASCIILower(a) == sqlkit.ASCIILower(c) }) {
			return nil, contract.Errorf(contract.Permanent, "%s: the table has no column %s", op, c)
		}
	}
	marks := slices.ContainsFunc(all, func(a string) bool { return sqlkit.ASCIILower(a) == contract.ColDeletedAt })
	q, args, err := sqlkit.ParentQuery(sqliteDialect, t, cols, f, marks, formatTime(f.Since), func(i int, v any, param string) (string, any, error) {
		if c := t.Column(t.Key[i]); c != nil {
			var err error
			if v, err = sqliteValue(c, v); err != nil {
				return "", nil, err
			}
		}
		return param, v, nil
	})
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var out [][]*string
	for rows.Next() {
		vals, err := sqlkit.ScanText(len(cols), rows.Scan)
		if err != nil {
			return nil, s.wrap(op, err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// sqliteDialect is how SQLite writes what sqlkit.Dialect names: ?
// parameters, CAST to TEXT, and timestamps (stored as text) compared as
// times through julianday.
var sqliteDialect = sqlkit.Dialect{
	Param:     func(int) string { return "?" },
	AsText:    func(col string) string { return "CAST(" + col + " AS TEXT)" },
	AtOrAfter: func(col, param string) string { return "julianday(" + col + ") >= julianday(" + param + ")" },
}

// parentsTable is the temporary table MissingParents loads the keys into;
// its transaction rolls back, which drops it.
const parentsTable = `temp."_idemsync_parents"`

// MissingParents implements contract.ParentReader: the keys go into a
// temporary table whose columns have the key columns' declared types (as
// a sweep loads its keys), and the first with no row of t, marked or not,
// is named. The table's key columns stand on the left of each comparison,
// so their own collation decides, as it does for the unique key.
func (s *Sink) MissingParents(ctx context.Context, t *contract.Table, keys func(func(string) error) error) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "look for missing parents in " + t.String()
	decl := map[string]string{}
	rows, err := s.db.QueryContext(ctx, `SELECT name, type FROM pragma_table_info(?)`, t.Name)
	if err != nil {
		return "", s.wrap(op, err)
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return "", s.wrap(op, err)
		}
		decl[sqlkit.ASCIILower(name)] = typ
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", s.wrap(op, err)
	}
	if len(decl) == 0 {
		return "", sqlkit.MissingTable(t)
	}
	st := &sqliteStmts{}
	var on, cols []string
	for k, name := range t.Key {
		d, ok := decl[sqlkit.ASCIILower(name)]
		if !ok {
			return "", contract.Errorf(contract.Permanent, "%s: the table has no key column %s", op, name)
		}
		st.keyDecl = append(st.keyDecl, d)
		on = append(on, fmt.Sprintf(`"_p".%s = "_k".k%d`, sqlkit.QuoteIdent(name), k))
		cols = append(cols, fmt.Sprintf(`CAST("_k".k%d AS TEXT)`, k))
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", s.wrap(op, err)
	}
	defer tx.Rollback() // also undoes the temporary table's creation
	if err := loadKeys(ctx, tx, parentsTable, t, st, keys); err != nil {
		return "", s.wrap(op, err)
	}
	q := fmt.Sprintf(`SELECT %s FROM %s AS "_k" WHERE NOT EXISTS (SELECT 1 FROM %s AS "_p" WHERE %s) LIMIT 1`,
		strings.Join(cols, ", "), parentsTable, sqlkit.QuoteTable(t), strings.Join(on, " AND "))
	vals, err := sqlkit.ScanText(len(t.Key), tx.QueryRowContext(ctx, q).Scan)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", s.wrap(op, err)
	}
	return sqlkit.KeyDesc(t, vals), nil
}
