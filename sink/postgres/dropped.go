package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// dropped counts, in the page's transaction after its merge, the rows of
// the page the table does not hold as written although the merge
// succeeded: a key still missing (a BEFORE INSERT trigger returned NULL),
// or a stored row with another hash that the version guard, if any, would
// have let through (a BEFORE UPDATE trigger returned NULL). args are the
// merge's arguments (pgMergeSQL); only the key, version and hash arrays
// are sent again.
//
// Only a BEFORE INSERT or UPDATE row trigger can do that (rules and row
// security make such a statement fail instead), so a table without one is
// not queried: its rows not written are unchanged.
func (p *Sink) dropped(ctx context.Context, tx pgx.Tx, t *contract.Table, types map[string]string, args []any) (int64, error) {
	key := sqlkit.QuoteTable(t)
	has, ok := p.triggers[key]
	if !ok {
		// tgtype bits: 1 row, 2 before, 4 insert, 16 update.
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1)
			AND NOT tgisinternal AND tgtype & 3 = 3 AND tgtype & 20 <> 0)`, key).Scan(&has)
		if err != nil {
			return 0, err
		}
		if p.triggers == nil {
			p.triggers = map[string]bool{}
		}
		p.triggers[key] = has
	}
	if !has {
		return 0, nil
	}
	q, idx := pgDroppedSQL(t, types)
	sub := make([]any, len(idx))
	for i, j := range idx {
		sub[i] = args[j]
	}
	var n int64
	err := tx.QueryRow(ctx, q, sub...).Scan(&n)
	return n, err
}

// pgDroppedSQL returns the query of dropped and, for each of its
// parameters, the index of the merge argument it takes: the key columns,
// the version column, then the hashes.
func pgDroppedSQL(t *contract.Table, types map[string]string) (string, []int) {
	const target = `"_t"`
	var params, names, on []string
	var idx []int
	val := map[string]string{}
	for i, c := range t.Columns {
		if !sqlkit.IsKey(t, c.Name) && c.Name != t.Version {
			continue
		}
		typ := types[c.Name]
		if typ == "" {
			typ = pgType(c.Type)
		}
		idx = append(idx, i)
		u := fmt.Sprintf("c%d", i)
		names = append(names, u)
		if binaryParam(&c, types) {
			params = append(params, fmt.Sprintf("$%d::%s[]", len(idx), typ))
			val[c.Name] = "u." + u
		} else {
			params = append(params, fmt.Sprintf("$%d::text[]", len(idx)))
			val[c.Name] = fmt.Sprintf("u.%s::%s", u, typ)
		}
	}
	for _, k := range t.Key {
		on = append(on, fmt.Sprintf("%s.%s = %s", target, sqlkit.QuoteIdent(k), val[k]))
	}
	idx = append(idx, len(t.Columns))
	params = append(params, fmt.Sprintf("$%d::text[]", len(idx)))
	names = append(names, "h")
	refused := fmt.Sprintf("%s.%s IS DISTINCT FROM u.h", target, sqlkit.QuoteIdent(contract.ColHash))
	if t.Version != "" {
		v := sqlkit.QuoteIdent(t.Version)
		refused += fmt.Sprintf(" AND (%s.%s IS NULL OR %s >= %[1]s.%[2]s) IS TRUE", target, v, val[t.Version])
	}
	return fmt.Sprintf(`SELECT count(*) FROM unnest(%s) AS u(%s)
LEFT JOIN %s AS %s ON %s
WHERE %s.%s IS NULL OR (%s)`,
		strings.Join(params, ", "), strings.Join(names, ", "),
		sqlkit.QuoteTable(t), target, strings.Join(on, " AND "),
		target, sqlkit.QuoteIdent(t.Key[0]), refused), idx
}
