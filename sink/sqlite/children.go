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

// Child tables (docs/job-file.md, "Child tables"): each is prepared like
// a target table, and written, deleted and marked in its root row's
// page transaction, by the root row's key, which every descendant row
// carries (contract.Child.Root).

// prepareChildren prepares the child tables of t, at every depth, before
// t itself (Prepare).
func (s *Sink) prepareChildren(ctx context.Context, t *contract.Table) error {
	for i := range t.Children {
		if err := s.Prepare(ctx, &t.Children[i].Table); err != nil {
			return err
		}
	}
	return nil
}

// childStatements returns the statements of every descendant table of t,
// prepared before the page's transaction begins (the file has one
// connection).
func (s *Sink) childStatements(ctx context.Context, t *contract.Table) (map[*contract.Child]*sqliteStmts, error) {
	if len(t.Children) == 0 {
		return nil, nil
	}
	out := map[*contract.Child]*sqliteStmts{}
	for _, d := range t.Descendants() {
		st, err := s.statements(ctx, &d.Table)
		if err != nil {
			return nil, err
		}
		out[d] = st
	}
	return out, nil
}

// writeChildren replaces, in tx, the child rows at every depth of the
// rows of t at the indexes parents (those the page writes: an unchanged
// row keeps its children untouched) with the sets their records hold:
// every descendant row of those root rows is deleted, then the new ones
// inserted, so an element gone from its array is gone from its table.
// What it does to each child table is added to n.
func (s *Sink) writeChildren(ctx context.Context, tx *sql.Tx, t *contract.Table, st *sqliteStmts, kids map[*contract.Child]*sqliteStmts, rows []contract.Row, all [][]any, parents []int, n *contract.Counts) error {
	if len(t.Children) == 0 || len(parents) == 0 {
		return nil
	}
	if err := pruneTree(ctx, tx, t, st, all, parents, false, n); err != nil {
		return err
	}
	tree := sqlkit.GatherTree(t, rows, parents)
	for _, d := range t.Descendants() {
		drows := tree[d]
		if len(drows) == 0 {
			continue
		}
		dst := kids[d]
		dall, err := sqliteRows(&d.Table, dst, drows, false)
		if err != nil {
			return fmt.Errorf("child table %s: %w", d.Table.Name, err)
		}
		write := lastOfEachKey(dst, dall)
		dn, err := s.write(ctx, tx, &d.Table, dst, drows, dall, write)
		if err != nil {
			return fmt.Errorf("child table %s: %w", d.Table.Name, err)
		}
		if err := checkHeld(ctx, tx, &d.Table, dst, drows, dall, write); err != nil { // a numeric affinity declared by hand, as the parent's (fit.go)
			if ce := (*contract.Error)(nil); errors.As(err, &ce) {
				return err
			}
			return fmt.Errorf("child table %s: %w", d.Table.Name, err)
		}
		n.AddChild(d.Table.Name, dn.Inserted+dn.Updated, 0)
	}
	return nil
}

// pruneTree deletes, or with mark set on a soft table marks, every
// descendant row of the root rows of t at the indexes idx, in tx, and
// adds the rows deleted or marked to n.
func pruneTree(ctx context.Context, tx *sql.Tx, t *contract.Table, st *sqliteStmts, all [][]any, idx []int, mark bool, n *contract.Counts) error {
	if len(t.Children) == 0 || len(idx) == 0 {
		return nil
	}
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(t.Key)), ", ") + ")"
	per := max(1, countBatch/len(t.Key))
	for _, d := range t.Descendants() {
		for start := 0; start < len(idx); start += per {
			batch := idx[start:min(start+per, len(idx))]
			var args []any
			where := fmt.Sprintf("(%s) IN (VALUES %s)", sqlkit.QuoteList(d.Root), strings.TrimSuffix(strings.Repeat(tuple+", ", len(batch)), ", "))
			q := "DELETE FROM " + sqlkit.QuoteIdent(d.Table.Name) + " WHERE " + where
			if mark && t.Soft() {
				q = fmt.Sprintf("UPDATE %s SET %s = ? WHERE %[2]s IS NULL AND %s", sqlkit.QuoteIdent(d.Table.Name), sqlkit.QuoteIdent(contract.ColDeletedAt), where)
				args = append(args, formatTime(t.Clock()))
			}
			for _, ri := range batch {
				for _, i := range st.keyIdx {
					args = append(args, all[ri][i])
				}
			}
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return fmt.Errorf("child table %s: %w", d.Table.Name, err)
			}
			gone, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("child table %s: %w", d.Table.Name, err)
			}
			// A row still there (live, when marking) is one a trigger
			// kept (RAISE(IGNORE)): the array or the parent is gone, its
			// element is not (contract.KeptRows).
			live, keys := "", args
			if mark && t.Soft() {
				live, keys = sqlkit.QuoteIdent(contract.ColDeletedAt)+" IS NULL AND ", args[1:]
			}
			var kept int64
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+sqlkit.QuoteIdent(d.Table.Name)+" WHERE "+live+where, keys...).Scan(&kept); err != nil {
				return fmt.Errorf("child table %s: %w", d.Table.Name, err)
			}
			if kept > 0 {
				what := "page"
				if mark {
					what = "page's tombstones"
				}
				return contract.KeptRows(&d.Table, what, mark && t.Soft(), kept)
			}
			n.AddChild(d.Table.Name, 0, gone)
		}
	}
	return nil
}

// sweepChildren, after a sweep removed or marked rows of t in tx, deletes
// the descendant rows whose root row is gone and, on a soft table, marks
// those whose root row is marked.
func sweepChildren(ctx context.Context, tx *sql.Tx, t *contract.Table) error {
	for _, d := range t.Descendants() {
		q := sqlkit.OrphansSQL(t, d)
		if t.Soft() {
			q = sqlkit.MarkSQL(t, d)
		}
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("child table %s: %w", d.Table.Name, err)
		}
		// Rows still there (live) whose root row is gone (marked) are
		// rows a trigger kept (contract.KeptRows). Only a table with a
		// trigger can keep one: the others are not scanned again.
		var kept int64
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE`, d.Table.Name).Scan(&kept)
		if err == nil && kept > 0 {
			err = tx.QueryRowContext(ctx, sqlkit.LeftSQL(t, d)).Scan(&kept)
		}
		if err != nil {
			return fmt.Errorf("child table %s: %w", d.Table.Name, err)
		}
		if kept > 0 {
			return contract.KeptRows(&d.Table, "sweep", t.Soft(), kept)
		}
	}
	return nil
}
