package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

var _ contract.ParentReader = (*Sink)(nil)

// ParentRows implements contract.ParentReader: cols of the rows of t that f
// keeps (not those marked deleted), as text, by key. Synced-at times are compared as times
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
	sel := make([]string, len(cols))
	for i, c := range cols {
		if !slices.ContainsFunc(all, func(a string) bool { return sqlkit.ASCIILower(a) == sqlkit.ASCIILower(c) }) {
			return nil, contract.Errorf(contract.Permanent, "%s: the table has no column %s", op, c)
		}
		sel[i] = fmt.Sprintf("CAST(%s AS TEXT)", sqlkit.QuoteIdent(c))
	}
	var where []string
	var args []any
	if !f.Since.IsZero() {
		where = append(where, fmt.Sprintf("julianday(%s) >= julianday(?)", sqlkit.QuoteIdent(contract.ColSyncedAt)))
		args = append(args, formatTime(f.Since))
	}
	if t.Soft() { // a parent marked deleted has no children to walk
		where = append(where, sqlkit.QuoteIdent(contract.ColDeletedAt)+" IS NULL")
	}
	keys := make([]string, len(t.Key))
	for i, k := range t.Key {
		keys[i] = sqlkit.QuoteIdent(k)
	}
	for _, b := range []struct {
		op   string
		vals []any
	}{{">=", f.From}, {"<=", f.To}, {">", f.After}} {
		if b.vals == nil {
			continue
		}
		marks := make([]string, len(b.vals))
		for i, v := range b.vals {
			if c := t.Column(t.Key[i]); c != nil {
				if v, err = sqliteValue(c, v); err != nil {
					return nil, err
				}
			}
			marks[i] = "?"
			args = append(args, v)
		}
		where = append(where, fmt.Sprintf("(%s) %s (%s)", strings.Join(keys, ", "), b.op, strings.Join(marks, ", ")))
	}
	q := fmt.Sprintf("SELECT %s FROM %s", strings.Join(sel, ", "), table)
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + strings.Join(keys, ", ")
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
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
