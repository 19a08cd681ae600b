package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

var _ contract.ParentReader = (*Sink)(nil)

// ParentRows implements contract.ParentReader: cols of the rows of t that f
// keeps, by key, each value as its JSON form's text (to_json: timestamps
// in ISO 8601, numbers as the server writes them). Key bounds are sent as
// text and cast to the key columns' types as the server has them, so a
// parent whose columns are inferred is bounded like any other.
func (p *Sink) ParentRows(ctx context.Context, t *contract.Table, cols []string, f contract.ParentFilter) ([][]*string, error) {
	op := "read parent rows of " + t.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.connect(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, p.dbError(op, err)
	}
	defer func() {
		rctx, cancel := rollbackContext(ctx)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	delete(p.types, sqlkit.QuoteTable(t)) // the parent's run may have added columns since
	types, err := p.columnTypes(ctx, tx, t)
	if err != nil {
		return nil, p.dbError(op, err)
	}
	if len(types) == 0 {
		return nil, sqlkit.MissingTable(t)
	}
	sel := make([]string, len(cols))
	for i, c := range cols {
		if _, ok := types[c]; !ok {
			return nil, contract.Errorf(contract.Permanent, "%s: the table has no column %s", op, c)
		}
		sel[i] = fmt.Sprintf("to_json(%s) #>> '{}'", sqlkit.QuoteIdent(c))
	}
	var where []string
	var args []any
	if !f.Since.IsZero() {
		args = append(args, f.Since.UTC())
		where = append(where, fmt.Sprintf("%s >= $%d", sqlkit.QuoteIdent(contract.ColSyncedAt), len(args)))
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
			text := sqlkit.ToText(v)
			if tm, ok := v.(time.Time); ok {
				text = tm.UTC().Format(time.RFC3339Nano)
			}
			args = append(args, text)
			marks[i] = fmt.Sprintf("$%d::text::%s", len(args), types[t.Key[i]])
		}
		where = append(where, fmt.Sprintf("(%s) %s (%s)", strings.Join(keys, ", "), b.op, strings.Join(marks, ", ")))
	}
	q := fmt.Sprintf("SELECT %s FROM %s", strings.Join(sel, ", "), sqlkit.QuoteTable(t))
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + strings.Join(keys, ", ")
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, p.dbError(op, err)
	}
	defer rows.Close()
	var out [][]*string
	for rows.Next() {
		vals, err := sqlkit.ScanText(len(cols), rows.Scan)
		if err != nil {
			return nil, p.dbError(op, err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, p.dbError(op, err)
	}
	return out, nil
}
