package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// pgVerifyTerms returns, with t.Verify set, the terms the merge's WHERE
// adds to the hash comparison: " OR target.c::text IS DISTINCT FROM
// EXCLUDED.c::text" for each mapped column that is not a key column, so
// that a row edited outside idemsync (its hash unchanged) is rewritten.
// Both sides are in the column's type, compared in its text form: the
// stored form, so numeric 12.5 differs from 12.50 and jsonb compares as
// jsonb normalizes it; json, which has no equality, compares as text.
// COLLATE "C" compares the text byte by byte, whatever the column's
// collation (a nondeterministic one takes 'BOB' for 'Bob'). It returns ""
// without t.Verify.
func pgVerifyTerms(t *contract.Table, target string) string {
	if !t.Verify {
		return ""
	}
	var b strings.Builder
	for _, c := range t.Columns {
		if !sqlkit.IsKey(t, c.Name) {
			fmt.Fprintf(&b, ` OR %s.%s::text COLLATE "C" IS DISTINCT FROM EXCLUDED.%[2]s::text`, target, sqlkit.QuoteIdent(c.Name))
		}
	}
	return b.String()
}

// narrowed returns the columns of t whose type in the table (types) is
// not the one idemsync gives their column type and may hold less (a
// numeric with a scale, a varchar(n), a real for a double, an integer for
// a bigint), in column order.
func narrowed(t *contract.Table, types map[string]string) []int {
	var out []int
	for j := range t.Columns {
		c := &t.Columns[j]
		typ := types[c.Name]
		ct := typeOf(c.Type)
		if typ == "" || typ == ct.binary || typ == fitRef(c, typ) || sqlkit.IsKey(t, c.Name) {
			continue
		}
		out = append(out, j)
	}
	return out
}

// fitRef is the type a value of c is compared in to tell whether the
// column's type typ holds it: the type idemsync creates for c, except for
// a timestamp without time zone (timestamp(0) too), whose text input
// ignores the zone: those compare as timestamp without time zone.
func fitRef(c *contract.Column, typ string) string {
	if c.Type == contract.TypeTimestamp && strings.HasSuffix(typ, "without time zone") {
		return "timestamp without time zone"
	}
	return pgType(c.Type)
}

// checkFit fails when a value of the page does not survive its column's
// type: cast to the column's type and back to the type idemsync gives it,
// it is no longer the same value (a numeric rounded to a narrower scale,
// text cut to a varchar(n)). Writing it would store the altered value,
// exit 0 and count the row unchanged from then on (or, verifying, report
// it verified); instead the page fails with Permanent naming the table,
// column and key, with a hint to widen the column. A table whose columns
// all have the types idemsync creates is not checked. args are
// mergeArgs' parameters.
func (p *Sink) checkFit(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, types map[string]string, args []any) error {
	for _, j := range narrowed(t, types) {
		c := &t.Columns[j]
		decl := fitRef(c, types[c.Name])
		params, names, keys := []string{"$1::text[]"}, []string{"v"}, []string{}
		qargs := []any{args[j]}
		for i, k := range t.Key {
			kj := keyIndex(t, k)
			typ := types[k]
			if typ == "" {
				typ = pgType(t.Columns[kj].Type)
			}
			cast := "text"
			if binaryParam(&t.Columns[kj], types) {
				cast = typ
			}
			qargs = append(qargs, args[kj])
			params = append(params, fmt.Sprintf("$%d::%s[]", len(qargs), cast))
			names = append(names, fmt.Sprintf("k%d", i))
			keys = append(keys, fmt.Sprintf("u.k%d::text", i))
		}
		q := fmt.Sprintf(`SELECT ARRAY[%[1]s], u.v, (u.v::%[2]s)::text FROM unnest(%[3]s) AS u(%[4]s)
WHERE (u.v::%[2]s)::%[5]s IS DISTINCT FROM u.v::%[5]s LIMIT 1`,
			strings.Join(keys, ", "), types[c.Name], strings.Join(params, ", "), strings.Join(names, ", "), decl)
		var key []*string
		var value, held string
		err := tx.QueryRow(ctx, q, qargs...).Scan(&key, &value, &held)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue
		case err != nil:
			return p.dbError(op, err)
		}
		return &contract.Error{Class: contract.Permanent,
			Msg: fmt.Sprintf("%s: column %q (%s) cannot hold %q as written (record with key %s): it would hold %q",
				op, c.Name, types[c.Name], clip(value), keyText(t.Key, key), clip(held)),
			Hint: fmt.Sprintf("widen the column (ALTER TABLE %s ALTER COLUMN %s TYPE %s) and run again", sqlkit.QuoteTable(t), sqlkit.QuoteIdent(c.Name), decl),
		}
	}
	return nil
}

// clip shortens a value quoted in a message to 80 bytes or so.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return strings.ToValidUTF8(s[:77], "") + "..."
}

// keyText renders a key as name=value pairs ("id=7, tenant=a").
func keyText(names []string, vals []*string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		v := "NULL"
		if i < len(vals) && vals[i] != nil {
			v = *vals[i]
		}
		parts[i] = n + "=" + v
	}
	return strings.Join(parts, ", ")
}

// keyIndex returns the index in t.Columns of the column named name, or -1.
func keyIndex(t *contract.Table, name string) int {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return i
		}
	}
	return -1
}

// treesDiffer returns, for a verify upsert, the rows of kept not in
// changed whose child rows the child tables do not hold exactly as they
// would be written: at some depth, a row of the record missing, stored
// with another value in a column (compared as pgVerifyTerms does) or
// another hash, or marked deleted, or a row more under the root row (a
// row added by hand, or one the record no longer has). Only those have
// their children rewritten, so that a verify run of child tables nobody
// touched deletes and writes nothing there (docs/operations.md, "Verify").
func (p *Sink) treesDiffer(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, types map[string]string, kept, changed []contract.Row) ([]contract.Row, error) {
	if len(t.Children) == 0 {
		return nil, nil
	}
	// changedRows returns kept's rows themselves: the same values.
	in := make(map[*any]bool, len(changed))
	for _, r := range changed {
		in[&r.Values[0]] = true
	}
	var cand []contract.Row
	for _, r := range kept {
		if err := rowWidth(op, t, r); err != nil {
			return nil, err
		}
		if !in[&r.Values[0]] {
			cand = append(cand, r)
		}
	}
	if len(cand) == 0 {
		return nil, nil
	}
	rootArgs, rootCasts, rootParams, rootAlias, err := keyArrays(op, t, types, cand, 1)
	if err != nil {
		return nil, err
	}
	differ := make([]bool, len(cand))
	mark := func(q string, args []any) error {
		res, err := tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer res.Close()
		for res.Next() {
			var i int64
			if err := res.Scan(&i); err != nil {
				return err
			}
			differ[i] = true
		}
		return res.Err()
	}
	for _, d := range t.Descendants() {
		dop := op + ": child table " + d.Table.String()
		dtypes, err := p.columnTypes(ctx, tx, &d.Table)
		if err != nil {
			return nil, p.dbError(dop, err)
		}
		// The rows each root row's record gives d, as writeChildren
		// gathers them, and their count.
		var rows []contract.Row
		var owner, counts []int64
		for i := range cand {
			rs, _ := canonicalKeys(&d.Table, sqlkit.GatherTree(t, cand, []int{i})[d], keyForm)
			counts = append(counts, int64(len(rs)))
			for range rs {
				owner = append(owner, int64(i))
			}
			rows = append(rows, rs...)
		}
		on := make([]string, len(t.Key))
		for k := range t.Key {
			on[k] = fmt.Sprintf(`"_s".%s = %s`, sqlkit.QuoteIdent(d.Root[k]), rootCasts[k])
		}
		q := fmt.Sprintf(`SELECT u.i - 1 FROM unnest(%s, $%d::bigint[]) WITH ORDINALITY AS u(%s, n, i)
WHERE u.n <> (SELECT count(*) FROM %s AS "_s" WHERE %s)`, strings.Join(rootParams, ", "), len(rootParams)+1,
			strings.Join(rootAlias, ", "), sqlkit.QuoteTable(&d.Table), strings.Join(on, " AND "))
		if err := mark(q, append(append([]any{}, rootArgs...), counts)); err != nil {
			return nil, p.dbError(dop, err)
		}
		if len(rows) == 0 {
			continue
		}
		var args []any
		var params, names, same []string
		for j := range d.Table.Columns {
			c := &d.Table.Columns[j]
			col := make([]*string, len(rows))
			for i, r := range rows {
				if err := rowWidth(dop, &d.Table, r); err != nil {
					return nil, err
				}
				if col[i], err = pgText(c, r.Values[j]); err != nil {
					return nil, fmt.Errorf("%s: %w", dop, err)
				}
			}
			typ := dtypes[c.Name]
			if typ == "" {
				typ = pgType(c.Type)
			}
			args = append(args, col)
			params = append(params, fmt.Sprintf("$%d::text[]", len(args)))
			names = append(names, fmt.Sprintf("c%d", j))
			if sqlkit.IsKey(&d.Table, c.Name) {
				same = append(same, fmt.Sprintf(`"_s".%s = u.c%d::%s`, sqlkit.QuoteIdent(c.Name), j, typ))
			} else {
				same = append(same, fmt.Sprintf(`"_s".%s::text COLLATE "C" IS NOT DISTINCT FROM (u.c%d::%s)::text`, sqlkit.QuoteIdent(c.Name), j, typ))
			}
		}
		hashes := make([]string, len(rows))
		for i, r := range rows {
			hashes[i] = r.Hash
		}
		args = append(args, hashes, owner)
		same = append(same, fmt.Sprintf(`"_s".%s = u.h`, sqlkit.QuoteIdent(contract.ColHash)))
		if pgUnmarks(&d.Table, dtypes) {
			same = append(same, fmt.Sprintf(`"_s".%s IS NULL`, sqlkit.QuoteIdent(contract.ColDeletedAt)))
		}
		q = fmt.Sprintf(`SELECT u.o FROM unnest(%s, $%d::text[], $%d::bigint[]) AS u(%s, h, o)
WHERE NOT EXISTS (SELECT 1 FROM %s AS "_s" WHERE %s)`, strings.Join(params, ", "), len(args)-1, len(args),
			strings.Join(names, ", "), sqlkit.QuoteTable(&d.Table), strings.Join(same, " AND "))
		if err := mark(q, args); err != nil {
			return nil, p.dbError(dop, err)
		}
	}
	var out []contract.Row
	for i, r := range cand {
		if differ[i] {
			out = append(out, r)
		}
	}
	return out, nil
}
