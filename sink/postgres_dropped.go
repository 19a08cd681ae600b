package sink

import (
	"context"
	"fmt"
	"strings"

	idsync "github.com/idemsync/idemsync/sync"
	"github.com/jackc/pgx/v5"
)

// dropped counts, in the page's transaction after its merge, the rows of
// the page the table does not hold as written although the merge
// succeeded: a key still missing (a BEFORE INSERT trigger returned NULL),
// or a stored row with another hash that the version guard, if any, would
// have let through (a BEFORE UPDATE trigger returned NULL). args are the
// merge's arguments without the synced-at time.
func (p *Postgres) dropped(ctx context.Context, tx pgx.Tx, t *idsync.Table, types map[string]string, args []any) (int64, error) {
	var n int64
	err := tx.QueryRow(ctx, pgDroppedSQL(t, types), args...).Scan(&n)
	return n, err
}

// pgDroppedSQL returns the query of dropped: $1…$n are the column arrays
// of pgMergeSQL, $n+1 the hashes.
func pgDroppedSQL(t *idsync.Table, types map[string]string) string {
	const target = `"_t"`
	var params, names, on []string
	val := map[string]string{}
	for i, c := range t.Columns {
		typ := types[c.Name]
		if typ == "" {
			typ = pgType(c.Type)
		}
		u := fmt.Sprintf("c%d", i)
		names = append(names, u)
		if binaryParam(&c, types) {
			params = append(params, fmt.Sprintf("$%d::%s[]", i+1, typ))
			val[c.Name] = "u." + u
		} else {
			params = append(params, fmt.Sprintf("$%d::text[]", i+1))
			val[c.Name] = fmt.Sprintf("u.%s::%s", u, typ)
		}
	}
	for _, k := range t.Key {
		on = append(on, fmt.Sprintf("%s.%s = %s", target, QuoteIdent(k), val[k]))
	}
	params = append(params, fmt.Sprintf("$%d::text[]", len(t.Columns)+1))
	names = append(names, "h")
	refused := fmt.Sprintf("%s.%s IS DISTINCT FROM u.h", target, QuoteIdent(idsync.ColHash))
	if t.Version != "" {
		v := QuoteIdent(t.Version)
		refused += fmt.Sprintf(" AND (%s.%s IS NULL OR %s >= %[1]s.%[2]s) IS TRUE", target, v, val[t.Version])
	}
	return fmt.Sprintf(`SELECT count(*) FROM unnest(%s) AS u(%s)
LEFT JOIN %s AS %s ON %s
WHERE %s.%s IS NULL OR (%s)`,
		strings.Join(params, ", "), strings.Join(names, ", "),
		quoteTable(t), target, strings.Join(on, " AND "),
		target, QuoteIdent(t.Key[0]), refused)
}
