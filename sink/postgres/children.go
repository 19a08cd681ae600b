package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// Child tables (docs/job-file.md, "Child tables"): each is prepared like
// a target table, and written, deleted and marked in its root row's
// page transaction, by the root row's key, which every descendant row
// carries (contract.Child.Root).

// prepareChildren prepares the child tables of t, at every depth, before
// t itself (Prepare).
func (p *Sink) prepareChildren(ctx context.Context, t *contract.Table) error {
	for i := range t.Children {
		if err := p.Prepare(ctx, &t.Children[i].Table); err != nil {
			return err
		}
	}
	return nil
}

// writeChildren replaces, in tx, the child rows at every depth of the
// rows of kept that the page changes (all of them when t.Verify): every
// descendant row of those root rows is deleted, then the rows their
// records hold are written, so an element gone from its array is gone
// from its table. An unchanged row (stored with the same hash, and not
// marked) keeps its children untouched. It runs before the merge, which
// would make every row look unchanged. What it does to each child table
// is added to n.
func (p *Sink) writeChildren(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, types map[string]string, kept []contract.Row, n *contract.Counts) error {
	if len(t.Children) == 0 || len(kept) == 0 {
		return nil
	}
	changed, stored, err := p.changedRows(ctx, tx, op, t, types, kept)
	if err != nil || len(changed) == 0 {
		return err
	}
	prune := changed
	if own, err := p.ownTree(ctx, tx, t); err != nil {
		return p.dbError(op, err)
	} else if own {
		prune = stored
	}
	if err := p.pruneTree(ctx, tx, op, t, types, prune, false, n); err != nil {
		return err
	}
	idx := make([]int, len(changed))
	for i := range idx {
		idx[i] = i
	}
	tree := sqlkit.GatherTree(t, changed, idx)
	for _, d := range t.Descendants() {
		drows := tree[d]
		if len(drows) == 0 {
			continue
		}
		dop := op + ": child table " + d.Table.String()
		drows, _ = canonicalKeys(&d.Table, drows, keyForm)
		dtypes, err := p.columnTypes(ctx, tx, &d.Table)
		if err != nil {
			return p.dbError(dop, err)
		}
		// Into a child table holding only rows this sink inserted (a first
		// load), COPY, as for the parents: the rows replaced were deleted
		// above, and an element key met twice makes COPY refuse, for the
		// merge (fresh.go, copy.go).
		copied, err := p.copyFresh(ctx, tx, dop, &d.Table, dtypes, drows)
		if err != nil {
			return err
		}
		if copied {
			n.AddChild(d.Table.Name, int64(len(drows)), 0)
			continue
		}
		data, err := pageValues(dop, &d.Table, drows)
		if err != nil {
			return err
		}
		args, err := mergeArgs(dop, &d.Table, drows, data, dtypes)
		if err != nil {
			return err
		}
		if err := p.checkFit(ctx, tx, dop, &d.Table, dtypes, args); err != nil { // a column narrowed by hand, as the parent's (verify.go)
			return err
		}
		dn, err := p.merge(ctx, tx, dop, &d.Table, dtypes, args, len(drows))
		if err != nil {
			return err
		}
		n.AddChild(d.Table.Name, dn.Inserted+dn.Updated, 0)
	}
	return nil
}

// keyArrays returns the key values of rows as one text array per key
// column (the parameters $first…), the casts of their unnest aliases
// (u.k0::type …) and the aliases.
func keyArrays(op string, t *contract.Table, types map[string]string, rows []contract.Row, first int) (args []any, casts, params, alias []string, err error) {
	for k, i := range keyIndexes(t) {
		c := &t.Columns[i]
		typ := types[c.Name]
		if typ == "" {
			typ = pgType(c.Type)
		}
		col := make([]*string, len(rows))
		for j, r := range rows {
			if col[j], err = pgText(c, r.Values[i]); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("%s: %w", op, err)
			}
		}
		args = append(args, col)
		casts = append(casts, fmt.Sprintf("u.k%d::%s", k, typ))
		params = append(params, fmt.Sprintf("$%d::text[]", first+k))
		alias = append(alias, fmt.Sprintf("k%d", k))
	}
	return args, casts, params, alias, nil
}

// changedRows returns the rows of kept that the table does not hold as
// they are: absent, stored with another hash, or marked deleted; and,
// of those, the ones it holds (stored with another hash, or marked).
// With t.Verify it adds the rows whose child rows, at some depth, the
// child tables do not hold exactly as they would be written
// (treesDiffer, verify.go), counted as held: their children are
// rewritten, and those of a row stored as it is, children included, are
// not touched. It asks in tx, a page's transaction or the connection
// itself (unchanged.go).
func (p *Sink) changedRows(ctx context.Context, tx querier, op string, t *contract.Table, types map[string]string, kept []contract.Row) (changed, stored []contract.Row, err error) {
	if t.Verify {
		plain := *t
		plain.Verify = false
		if changed, stored, err = p.changedRows(ctx, tx, op, &plain, types, kept); err != nil {
			return nil, nil, err
		}
		ptx, ok := tx.(pgx.Tx) // a verifying page is never asked outside its transaction (changedOutside)
		if !ok {
			return nil, nil, fmt.Errorf("%s: a verifying page's rows asked outside its transaction", op)
		}
		differ, err := p.treesDiffer(ctx, ptx, op, t, types, kept, changed)
		if err != nil {
			return nil, nil, err
		}
		return append(changed, differ...), append(stored, differ...), nil
	}
	args, casts, params, alias, err := keyArrays(op, t, types, kept, 1)
	if err != nil {
		return nil, nil, err
	}
	hashes := make([]string, len(kept))
	for i, r := range kept {
		hashes[i] = r.Hash
	}
	args = append(args, hashes)
	on := make([]string, 0, len(t.Key)+2)
	for k, name := range t.Key {
		on = append(on, fmt.Sprintf(`"_s".%s = %s`, sqlkit.QuoteIdent(name), casts[k]))
	}
	held := strings.Join(on, " AND ")
	on = append(on, fmt.Sprintf(`"_s".%s = u.h`, sqlkit.QuoteIdent(contract.ColHash)))
	if pgUnmarks(t, types) {
		on = append(on, fmt.Sprintf(`"_s".%s IS NULL`, sqlkit.QuoteIdent(contract.ColDeletedAt)))
	}
	// The second probe runs for the changed rows only: none on an
	// unchanged re-sync.
	q := fmt.Sprintf(`SELECT u.i, EXISTS (SELECT 1 FROM %[4]s AS "_s" WHERE %[6]s) FROM unnest(%[1]s, $%[2]d::text[]) WITH ORDINALITY AS u(%[3]s, h, i) WHERE NOT EXISTS (SELECT 1 FROM %[4]s AS "_s" WHERE %[5]s)`,
		strings.Join(params, ", "), len(params)+1, strings.Join(alias, ", "), sqlkit.QuoteTable(t), strings.Join(on, " AND "), held)
	res, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, p.dbError(op, err)
	}
	defer res.Close()
	for res.Next() {
		var i int64
		var held bool
		if err := res.Scan(&i, &held); err != nil {
			return nil, nil, p.dbError(op, err)
		}
		changed = append(changed, kept[i-1])
		if held {
			stored = append(stored, kept[i-1])
		}
	}
	if err := res.Err(); err != nil {
		return nil, nil, p.dbError(op, err)
	}
	return changed, stored, nil
}

// ownTree reports whether t and every child table of t hold only rows
// this sink inserted since it found them empty (fresh.go). Then a child
// row's root row is in t: the sink writes child rows with their root row,
// in its page's transaction, and deletes them with it (a tombstone, a
// sweep); the parent's merge would have ended t's own-rows state had a
// trigger kept a root row out. So a root row t does not hold has no
// descendant rows to delete, and a first load deletes nothing.
func (p *Sink) ownTree(ctx context.Context, tx pgx.Tx, t *contract.Table) (bool, error) {
	if own, err := p.ownRowsOnly(ctx, tx, t); err != nil || !own {
		return false, err
	}
	for _, d := range t.Descendants() {
		if own, err := p.ownRowsOnly(ctx, tx, &d.Table); err != nil || !own {
			return false, err
		}
	}
	return true, nil
}

// pruneTree deletes, or with mark set on a soft table marks, every
// descendant row of the root rows roots of t, in tx, and adds the rows
// deleted or marked to n.
func (p *Sink) pruneTree(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, types map[string]string, roots []contract.Row, mark bool, n *contract.Counts) error {
	if len(t.Children) == 0 || len(roots) == 0 {
		return nil
	}
	args, casts, params, alias, err := keyArrays(op, t, types, roots, 1)
	if err != nil {
		return err
	}
	if mark && t.Soft() {
		args = append(args, t.Clock().UTC().Truncate(time.Microsecond))
	}
	// Each root key's rows are found by the child table's index on its
	// root columns, whatever the planner thinks of the table's size: on a
	// child table not analyzed since it grew (a first load, then a
	// re-sync whose parents change) it guessed that the keys of one page
	// matched half of it and joined them by hash over a sequential scan
	// of the whole table, for every page: quadratic in the run. Only for
	// these statements: the rest of the page's transaction plans as
	// configured (docs/performance.md, "Child tables").
	if _, err := tx.Exec(ctx, "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off"); err != nil {
		return p.dbError(op, err)
	}
	for _, d := range t.Descendants() {
		where := fmt.Sprintf("(%s) IN (SELECT %s FROM unnest(%s) AS u(%s))", sqlkit.QuoteList(d.Root),
			strings.Join(casts, ", "), strings.Join(params, ", "), strings.Join(alias, ", "))
		q := "DELETE FROM " + sqlkit.QuoteTable(&d.Table) + " WHERE " + where
		if mark && t.Soft() {
			q = fmt.Sprintf("UPDATE %s SET %s = $%d WHERE %[2]s IS NULL AND %[4]s", sqlkit.QuoteTable(&d.Table), sqlkit.QuoteIdent(contract.ColDeletedAt), len(params)+1, where)
		}
		// Planned at each run, with the table as it is then: a prepared
		// statement's generic plan, made once it had run five times while
		// the table was small, probed it by a sequential scan per key
		// ever after. An unnamed statement costs no extra round trip.
		tag, err := tx.Exec(ctx, q, append([]any{pgx.QueryExecModeExec}, args...)...)
		if err != nil {
			return p.dbError(op+": child table "+d.Table.String(), err)
		}
		// A row still there (live, when marking) is one a trigger, rule or
		// policy kept: the array or the parent is gone, its element is not
		// (contract.KeptRows).
		live, keys := "", args
		if mark && t.Soft() {
			live, keys = sqlkit.QuoteIdent(contract.ColDeletedAt)+" IS NULL AND ", args[:len(args)-1]
		}
		var kept int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+sqlkit.QuoteTable(&d.Table)+" WHERE "+live+where, append([]any{pgx.QueryExecModeExec}, keys...)...).Scan(&kept); err != nil {
			return p.dbError(op+": child table "+d.Table.String(), err)
		}
		if kept > 0 {
			what := "page"
			if mark {
				what = "page's tombstones"
			}
			return contract.KeptRows(&d.Table, what, mark && t.Soft(), kept)
		}
		n.AddChild(d.Table.Name, 0, tag.RowsAffected())
	}
	if _, err := tx.Exec(ctx, "SET LOCAL enable_hashjoin TO DEFAULT; SET LOCAL enable_mergejoin TO DEFAULT"); err != nil {
		return p.dbError(op, err)
	}
	return nil
}

// sweepChildren, after a sweep removed or marked rows of t in tx, deletes
// the descendant rows whose root row is gone and, on a soft table, marks
// those whose root row is marked.
func (p *Sink) sweepChildren(ctx context.Context, tx pgx.Tx, op string, t *contract.Table) error {
	for _, d := range t.Descendants() {
		q := sqlkit.OrphansSQL(t, d)
		if t.Soft() {
			q = sqlkit.MarkSQL(t, d)
		}
		if _, err := tx.Exec(ctx, q); err != nil {
			return p.dbError(op+": child table "+d.Table.String(), err)
		}
		// Rows still there (live) whose root row is gone (marked) are
		// rows a trigger, rule or policy kept (contract.KeptRows). Only a
		// table with one of them can keep a row: the others are not
		// scanned again.
		var may bool
		var kept int64
		err := tx.QueryRow(ctx, `SELECT relhastriggers OR relhasrules OR relrowsecurity FROM pg_class WHERE oid = $1::regclass`, sqlkit.QuoteTable(&d.Table)).Scan(&may)
		if err == nil && may {
			err = tx.QueryRow(ctx, sqlkit.LeftSQL(t, d)).Scan(&kept)
		}
		if err != nil {
			return p.dbError(op+": child table "+d.Table.String(), err)
		}
		if kept > 0 {
			return contract.KeptRows(&d.Table, "sweep", t.Soft(), kept)
		}
	}
	return nil
}
