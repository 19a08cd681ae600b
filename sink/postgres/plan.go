package postgres

import (
	"context"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

var _ contract.SchemaPlanner = (*Sink)(nil)

// PlanSchema compares the table's columns with t's (see
// contract.SchemaPlanner). It reads only. ALTER COLUMN … TYPE rewrites
// the whole table under an ACCESS EXCLUSIVE lock: the size returned is the
// table's with its indexes and TOAST (pg_total_relation_size).
func (p *Sink) PlanSchema(ctx context.Context, t *contract.Table) ([]contract.SchemaChange, int64, error) {
	if err := sqlkit.CheckTableName(t, pgMaxIdent); err != nil {
		return nil, 0, err
	}
	op := "read the columns of " + t.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.connect(ctx)
	if err != nil {
		return nil, 0, err
	}
	key := sqlkit.QuoteTable(t)
	var size *int64
	if err := conn.QueryRow(ctx, `SELECT pg_total_relation_size(to_regclass($1))`, key).Scan(&size); err != nil {
		return nil, 0, p.dbError(op, err)
	}
	if size == nil {
		return nil, 0, nil // no table yet: the run creates it as t says
	}
	rows, err := conn.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, key)
	if err != nil {
		return nil, 0, p.dbError(op, err)
	}
	have := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return nil, 0, p.dbError(op, err)
		}
		have[name] = typ
	}
	if err := rows.Err(); err != nil {
		return nil, 0, p.dbError(op, err)
	}
	var out []contract.SchemaChange
	for _, c := range t.Columns {
		ct := typeOf(c.Type)
		want := ct.binary
		if want == "" {
			want = ct.decl
		}
		switch h, ok := have[c.Name]; {
		case !ok:
			out = append(out, contract.SchemaChange{Table: t.String(), Column: c.Name, To: string(c.Type)})
		case h != want:
			out = append(out, contract.SchemaChange{Table: t.String(), Column: c.Name, From: h, To: string(c.Type)})
		}
	}
	return out, *size, nil
}
