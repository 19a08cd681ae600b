package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// convertingColumns returns the indexes of the columns of t, other than
// the key, that idemsync writes as text but whose declared type in the
// table (decl, by lower-cased name) has a numeric affinity (INTEGER, REAL
// or NUMERIC: a table created or altered by hand). SQLite converts the
// text written into such a column when it reads as a number: "00501" is
// stored as 501, a numeric of 20 digits as a REAL of 15 (checkHeld).
func convertingColumns(t *contract.Table, decl map[string]string) []int {
	var out []int
	for i, c := range t.Columns {
		d, ok := decl[sqlkit.ASCIILower(c.Name)]
		if !ok || sqlkit.IsKey(t, c.Name) || affinity(sqliteType(c.Type)) != affText {
			continue
		}
		switch affinity(d) {
		case affInteger, affReal, affNumeric:
			out = append(out, i)
		}
	}
	return out
}

// checkHeld fails, after the page's writes and before its commit, when a
// column of st.convert changed a value of a row written (its stored hash
// is the row's) into another one: other text, or for a numeric another
// number. Such a run would exit 0 with the table unlike the source, and a
// verify run, comparing after the same conversion, would find them equal.
// The error is Permanent, names the table, column, declared type, key,
// value and stored form, and hints at a text column. A table whose
// columns all have the affinity idemsync gives them is not checked
// (docs/operations.md, "Verify").
func checkHeld(ctx context.Context, tx *sql.Tx, t *contract.Table, st *sqliteStmts, rows []contract.Row, all [][]any, write []int) error {
	if len(st.convert) == 0 || len(write) == 0 {
		return nil
	}
	sels := []string{sqlkit.QuoteIdent(contract.ColHash)}
	for _, j := range st.convert {
		q := sqlkit.QuoteIdent(t.Columns[j].Name)
		sels = append(sels, "typeof("+q+")", "CAST("+q+" AS TEXT)")
	}
	var on []string
	for _, k := range t.Key {
		on = append(on, sqlkit.QuoteIdent(k)+" = ?")
	}
	stmt, err := tx.PrepareContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s",
		strings.Join(sels, ", "), sqlkit.QuoteIdent(t.Name), strings.Join(on, " AND ")))
	if err != nil {
		return err
	}
	defer stmt.Close()
	out := make([]sql.NullString, len(sels))
	dest := make([]any, len(sels))
	for i := range out {
		dest[i] = &out[i]
	}
	for _, ri := range write {
		texts := false
		for _, j := range st.convert {
			_, ok := all[ri][j].(string)
			texts = texts || ok
		}
		if !texts {
			continue
		}
		keys := make([]any, len(st.keyIdx))
		for k, i := range st.keyIdx {
			keys[k] = all[ri][i]
		}
		err := stmt.QueryRowContext(ctx, keys...).Scan(dest...)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue // kept out by a trigger: counted dropped
		case err != nil:
			return err
		case out[0].String != rows[ri].Hash:
			continue // not written (the version guard kept a newer row)
		}
		for c, j := range st.convert {
			v, ok := all[ri][j].(string)
			typ, held := out[1+2*c].String, out[2+2*c].String
			if !ok || typ == "text" || sameHeld(t.Columns[j].Type, v, held) {
				continue
			}
			var key []string
			for k, i := range st.keyIdx {
				key = append(key, t.Key[k]+"="+sqlkit.ToText(all[ri][i]))
			}
			col := t.Columns[j].Name
			return &contract.Error{Class: contract.Permanent,
				Msg: fmt.Sprintf("upsert into %s: column %q (declared %s) cannot hold %q as written (record with key %s): it holds %q",
					t, col, st.convertDecl[c], clip(v), strings.Join(key, ", "), clip(held)),
				Hint: fmt.Sprintf("SQLite converts text that reads as a number in a column declared %s; give %s a TEXT column (recreate the table with %s TEXT) and run again",
					st.convertDecl[c], col, sqlkit.QuoteIdent(col)),
			}
		}
	}
	return nil
}

// sameHeld reports whether held, the text form of what a column stored
// for the value v written, is v: the same text, or for a numeric or a
// JSON number the same number ("1.50" stored as the REAL 1.5).
func sameHeld(typ contract.ColumnType, v, held string) bool {
	if v == held {
		return true
	}
	if typ != contract.TypeNumeric && typ != contract.TypeJSON {
		return false
	}
	a, ok := sqlkit.ParseDecimal(strings.TrimSpace(v))
	b, ok2 := sqlkit.ParseDecimal(held)
	return ok && ok2 && a.Rat().Cmp(b.Rat()) == 0
}

// clip shortens a value quoted in a message to 80 bytes or so.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:77] + "..."
}
