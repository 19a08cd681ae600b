package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// sqliteVerifyColumns returns the names of the mapped columns that are not
// key columns: what a verify upsert compares besides the hash.
func sqliteVerifyColumns(t *contract.Table) []string {
	var out []string
	for _, c := range t.Columns {
		if !sqlkit.IsKey(t, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// sqliteVerifyTerms returns, with t.Verify set, the terms the upsert's
// WHERE adds to the hash comparison: " OR target.c IS NOT next.c" for each
// column of sqliteVerifyColumns, so that a row edited outside idemsync
// (its hash unchanged) is rewritten. Both sides are in the column's stored
// form (excluded holds the value after the column's affinity); text
// compares byte by byte whatever the column's collation (NOCASE would
// take 'BOB' for 'Bob'). It returns "" without t.Verify.
func sqliteVerifyTerms(t *contract.Table, target, next string) string {
	if !t.Verify {
		return ""
	}
	var b strings.Builder
	for _, c := range sqliteVerifyColumns(t) {
		q := sqlkit.QuoteIdent(c)
		fmt.Fprintf(&b, " OR %s.%s IS NOT %s.%[2]s COLLATE BINARY", target, q, next)
	}
	return b.String()
}

// treesDiffer returns, for a verify upsert, the indexes among kept (rows
// of t, all their values) of the rows whose child rows are rewritten: a
// row the table does not hold with the same hash and unmarked (its
// children are rewritten as in any run), and a row whose child rows, at
// some depth, the child tables do not hold exactly as they would be
// written: a row of the record missing, stored with another value in a
// column (compared as sqliteVerifyTerms does) or another hash, or marked
// deleted, or a row more under the root row (a row added by hand, or one
// the record no longer has). The children of the other rows are not
// touched, so a verify run of child tables nobody touched deletes and
// writes nothing there (docs/operations.md, "Verify"). It runs before the
// page's rows are written, which would make every hash the same.
func treesDiffer(ctx context.Context, tx *sql.Tx, t *contract.Table, st *sqliteStmts, kids map[*contract.Child]*sqliteStmts, rows []contract.Row, all [][]any, kept []int) ([]int, error) {
	if len(t.Children) == 0 || len(kept) == 0 {
		return nil, nil
	}
	// same returns the statement counting the rows of table tbl (column
	// indexes keys and others bound in that order, after its hash) stored
	// as they are, and closes it with the others at the end.
	var stmts []*sql.Stmt
	defer func() {
		for _, p := range stmts {
			p.Close()
		}
	}()
	same := func(tbl *contract.Table, keys, others []int) (*sql.Stmt, error) {
		on := []string{sqlkit.QuoteIdent(contract.ColHash) + " = ?"}
		for _, i := range keys {
			on = append(on, sqlkit.QuoteIdent(tbl.Columns[i].Name)+" = ?")
		}
		for _, i := range others {
			on = append(on, sqlkit.QuoteIdent(tbl.Columns[i].Name)+" IS ? COLLATE BINARY")
		}
		var marks bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pragma_table_info(?) WHERE name = ?)`, tbl.Name, contract.ColDeletedAt).Scan(&marks); err != nil {
			return nil, err
		}
		if marks {
			on = append(on, sqlkit.QuoteIdent(contract.ColDeletedAt)+" IS NULL")
		}
		p, err := tx.PrepareContext(ctx, "SELECT count(*) FROM "+sqlkit.QuoteIdent(tbl.Name)+" WHERE "+strings.Join(on, " AND "))
		if err == nil {
			stmts = append(stmts, p)
		}
		return p, err
	}
	count := func(p *sql.Stmt, args ...any) (int, error) {
		var n int
		err := p.QueryRowContext(ctx, args...).Scan(&n)
		return n, err
	}
	parent, err := same(t, st.keyIdx, nil)
	if err != nil {
		return nil, err
	}
	descendants := t.Descendants()
	under := make([]*sql.Stmt, len(descendants)) // a root row's rows in each
	held := make([]*sql.Stmt, len(descendants))  // a row as it is in each
	others := make([][]int, len(descendants))    // the columns of each that are not its key
	for j, d := range descendants {
		var on []string
		for _, c := range d.Root {
			on = append(on, sqlkit.QuoteIdent(c)+" = ?")
		}
		if under[j], err = tx.PrepareContext(ctx, "SELECT count(*) FROM "+sqlkit.QuoteIdent(d.Table.Name)+" WHERE "+strings.Join(on, " AND ")); err != nil {
			return nil, fmt.Errorf("child table %s: %w", d.Table.Name, err)
		}
		stmts = append(stmts, under[j])
		dst := kids[d]
		for i := range d.Table.Columns {
			if !slices.Contains(dst.keyIdx, i) {
				others[j] = append(others[j], i)
			}
		}
		if held[j], err = same(&d.Table, dst.keyIdx, others[j]); err != nil {
			return nil, fmt.Errorf("child table %s: %w", d.Table.Name, err)
		}
	}
	var out []int
	for _, ri := range kept {
		key := make([]any, 0, len(st.keyIdx))
		for _, i := range st.keyIdx {
			key = append(key, all[ri][i])
		}
		differs, err := func() (bool, error) {
			if n, err := count(parent, append([]any{rows[ri].Hash}, key...)...); err != nil || n == 0 {
				return true, err
			}
			tree := sqlkit.GatherTree(t, rows, []int{ri})
			for j, d := range descendants {
				dst := kids[d]
				drows := tree[d]
				dall, err := sqliteRows(&d.Table, dst, drows, false)
				if err != nil {
					return false, fmt.Errorf("child table %s: %w", d.Table.Name, err)
				}
				last := lastOfEachKey(dst, dall)
				if n, err := count(under[j], key...); err != nil || n != len(last) {
					return true, err
				}
				for _, li := range last {
					args := []any{drows[li].Hash}
					for _, i := range append(dst.keyIdx[:len(dst.keyIdx):len(dst.keyIdx)], others[j]...) {
						args = append(args, dall[li][i])
					}
					if n, err := count(held[j], args...); err != nil || n == 0 {
						return true, err
					}
				}
			}
			return false, nil
		}()
		if err != nil {
			return nil, err
		}
		if differs {
			out = append(out, ri)
		}
	}
	return out, nil
}
