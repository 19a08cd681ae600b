package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// widenTemp is the column a widening copies values into before it takes
// the widened column's name.
const widenTemp = "_idemsync_widen"

// widen gives each column the engine widened (contract.Column.Was set) the
// declared type of its new type, in the page's transaction tx, when the
// affinity differs (INTEGER or REAL to TEXT; between TEXT types nothing
// changes: SQLite's dynamic typing keeps each stored value as it is).
// SQLite cannot change a column's type in place: the values are copied, as
// text, into a new column that then replaces the old one (an integer 5 is
// '5', a boolean 1 is 'true'), so the column moves to the end of the table.
// A column an index, view or trigger uses cannot be dropped: the error
// names it (docs/job-file.md, "Without columns").
func (s *Sink) widen(ctx context.Context, tx *sql.Tx, t *contract.Table) error {
	var decls map[string]string
	for _, c := range t.Columns {
		if c.Was == "" {
			continue
		}
		if decls == nil {
			var err error
			if decls, err = declaredTypes(ctx, tx, t.Name); err != nil {
				return s.wrap("read columns of "+t.String(), err)
			}
		}
		cur, ok := decls[sqlkit.ASCIILower(c.Name)]
		want := sqliteType(c.Type)
		if !ok || affinity(cur) == affinity(want) {
			continue
		}
		col, tmp, tbl := sqlkit.QuoteIdent(c.Name), sqlkit.QuoteIdent(widenTemp), sqlkit.QuoteIdent(t.Name)
		value := "CAST(" + col + " AS TEXT)"
		if c.Was == contract.TypeBoolean {
			value = "CASE WHEN " + col + " IS NULL THEN NULL WHEN " + col + " THEN 'true' ELSE 'false' END"
		}
		for _, q := range []string{
			fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", tbl, tmp, want),
			fmt.Sprintf("UPDATE %s SET %s = %s", tbl, tmp, value),
			fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", tbl, col),
			fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", tbl, tmp, col),
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				e := s.wrap(fmt.Sprintf("widen column %s of table %s from %s to %s (%s)", c.Name, t, cur, want, c.Type), err)
				if ie, ok := e.(*contract.Error); ok && ie.Class == contract.Permanent {
					ie.Hint = "drop the index, view or trigger that uses the column, or declare the column's type in target.columns"
				}
				return e
			}
		}
		s.logger.Info("widened column", "table", t.String(), "column", c.Name, "from", cur, "to", want)
	}
	return nil
}

// declaredTypes returns the declared type of each column of table, by
// lowercase name.
func declaredTypes(ctx context.Context, tx *sql.Tx, table string) (map[string]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name, type FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	decl := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, err
		}
		decl[sqlkit.ASCIILower(name)] = typ
	}
	return decl, rows.Err()
}
