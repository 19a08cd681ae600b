package postgres

import (
	"context"
	"fmt"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// widen alters, in the page's transaction tx, each column the engine
// widened (contract.Column.Was set) whose type in the table is not yet the
// one of its new type, so that a crash leaves the table and the checkpoint
// consistent: the type changes with the page's rows or not at all. Every
// value keeps its value (bigint 5 is numeric 5, numeric 79.19 is text
// '79.19', boolean true is text 'true' or JSON true). It returns the
// table's column types after the change (docs/job-file.md, "Without
// columns").
func (p *Sink) widen(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, types map[string]string) (map[string]string, error) {
	altered := false
	for _, c := range t.Columns {
		if !widens(&c, types) {
			continue
		}
		ct := typeOf(c.Type)
		col := sqlkit.QuoteIdent(c.Name)
		using := col + "::" + ct.decl
		if c.Type == contract.TypeJSON {
			using = "to_jsonb(" + col + ")"
		}
		q := fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s USING %s", sqlkit.QuoteTable(t), col, ct.decl, using)
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, p.dbError(fmt.Sprintf("%s: widen column %s from %s to %s", op, c.Name, types[c.Name], ct.decl), err)
		}
		p.logger.Info("widened column", "table", t.String(), "column", c.Name, "from", types[c.Name], "to", ct.decl)
		altered = true
	}
	if !altered {
		return types, nil
	}
	delete(p.types, sqlkit.QuoteTable(t)) // read again below; a rollback must not leave the new types cached
	types, err := p.columnTypes(ctx, tx, t)
	if err != nil {
		return nil, p.dbError(op, err)
	}
	delete(p.types, sqlkit.QuoteTable(t))
	return types, nil
}

// widens reports whether widen alters column c of a table whose column
// types are types: the engine widened it and the table's type is not yet
// the one of its new type.
func widens(c *contract.Column, types map[string]string) bool {
	ct := typeOf(c.Type)
	want := ct.binary
	if want == "" {
		want = ct.decl
	}
	return c.Was != "" && types[c.Name] != "" && types[c.Name] != want
}
