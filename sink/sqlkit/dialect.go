package sqlkit

import (
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
)

// Dialect is what the SQL of the two databases writes differently where
// the statements are otherwise the same. Each sink has one.
type Dialect struct {
	// Param is the placeholder of the n-th argument, from 1: "?" or "$n".
	Param func(n int) string
	// AsText selects a quoted column's value as text.
	AsText func(col string) string
	// AtOrAfter is the condition "the timestamp column col is at or after
	// the argument whose placeholder is param".
	AtOrAfter func(col, param string) string
}

// KeyArg turns the i-th key value of a bound into its argument and the
// expression that stands for it, given its placeholder.
type KeyArg func(i int, v any, param string) (expr string, arg any, err error)

// ParentQuery returns the query of contract.Sink.ParentRows on t and its
// arguments: cols as text, the rows f keeps (synced at or after f.Since,
// not marked deleted, key bounds From, To and After compared as row
// values), ordered by key, at most f.Limit of them. marks says that t has
// the soft-delete mark column: a mark says its record is gone whatever
// t.Deletes says now (docs/deletions.md, "target.deletes"). since is
// f.Since as the database takes it; key turns each key bound's value into
// its argument. It fails with key's error.
func ParentQuery(d Dialect, t *contract.Table, cols []string, f contract.ParentFilter, marks bool, since any, key KeyArg) (string, []any, error) {
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = d.AsText(QuoteIdent(c))
	}
	var where []string
	var args []any
	if !f.Since.IsZero() {
		args = append(args, since)
		where = append(where, d.AtOrAfter(QuoteIdent(contract.ColSyncedAt), d.Param(len(args))))
	}
	if t.Soft() || marks { // a parent marked deleted has no children to walk
		where = append(where, QuoteIdent(contract.ColDeletedAt)+" IS NULL")
	}
	keys := make([]string, len(t.Key))
	for i, k := range t.Key {
		keys[i] = QuoteIdent(k)
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
			expr, arg, err := key(i, v, d.Param(len(args)+1))
			if err != nil {
				return "", nil, err
			}
			args = append(args, arg)
			marks[i] = expr
		}
		where = append(where, fmt.Sprintf("(%s) %s (%s)", strings.Join(keys, ", "), b.op, strings.Join(marks, ", ")))
	}
	q := fmt.Sprintf("SELECT %s FROM %s", strings.Join(sel, ", "), QuoteTable(t))
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + strings.Join(keys, ", ")
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	return q, args, nil
}
