package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	sqlitedrv "modernc.org/sqlite"
)

// sqliteKeyFormFunc is the SQL function giving a stored key value its
// current form: idemsync_key_form(type, value) is value as sqliteKeyValue
// would bind it for a timestamp or numeric key (nine fractional digits;
// canonical decimal text), and value itself for anything it cannot parse.
const sqliteKeyFormFunc = "idemsync_key_form"

func init() {
	sqlitedrv.MustRegisterDeterministicScalarFunction(sqliteKeyFormFunc, 2,
		func(_ *sqlitedrv.FunctionContext, args []driver.Value) (driver.Value, error) {
			typ, _ := args[0].(string)
			s, ok := args[1].(string)
			if !ok {
				return args[1], nil
			}
			if f := typeOf(contract.ColumnType(typ)).keyText; f != nil {
				if out, ok := f(s); ok {
					return out, nil
				}
			}
			return s, nil
		})
}

// rewriteKeyForms brings the timestamp and numeric key values of an
// existing table that an earlier version stored in another form to their
// current form (see sqliteKeyValue), so that a re-sync finds their rows.
// A value whose current form another row already has (two rows for one key,
// which earlier versions let in for numerics such as 7 and 7.0) is left as
// it is and reported in a warning. Columns with integer or real affinity
// hold numbers, not text, and need nothing.
func (s *Sink) rewriteKeyForms(ctx context.Context, tx *sql.Tx, t *contract.Table, decl map[string]string) error {
	for _, k := range t.Key {
		c := t.Column(k)
		if c == nil {
			continue
		}
		switch affinity(decl[sqlkit.ASCIILower(k)]) {
		case affInteger, affReal:
			continue
		}
		q := sqlkit.QuoteIdent(k)
		cond := earlierKeyForms(c.Type, q)
		if cond == "" {
			continue
		}
		form := fmt.Sprintf("%s(%s, %s)", sqliteKeyFormFunc, quoteLiteral(string(c.Type)), q)
		where := cond + " AND " + q + " IS NOT " + form
		res, err := tx.ExecContext(ctx, "UPDATE OR IGNORE "+sqlkit.QuoteIdent(t.Name)+" SET "+q+" = "+form+" WHERE "+where)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			s.logger.Info("rewrote keys stored in an earlier form", "table", t.String(), "column", k, "rows", n)
		}
		var left int64
		if err := tx.QueryRowContext(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", sqlkit.QuoteIdent(t.Name), where)).Scan(&left); err != nil {
			return err
		}
		if left > 0 {
			s.logger.Warn("rows whose key equals another row's key in value; delete the ones not wanted",
				"table", t.String(), "column", k, "rows", left)
		}
	}
	return nil
}
