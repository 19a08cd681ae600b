package sqlite

import (
	"context"
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
