package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// keepsOut reports whether a trigger of t may keep rows of a page out of
// the table although the merge succeeds: a BEFORE INSERT or UPDATE row
// trigger returning NULL, or an AFTER one (row or statement) deleting or
// changing the rows just written, which the merge still reports written.
// The feed's own triggers (feed.go) write only the feed,
// and internal ones (foreign keys) fail a statement instead; rules and row
// security make such a statement fail too. A table with no other trigger
// on insert or update is not queried after its merges: its rows not
// written are unchanged.
func (p *Sink) keepsOut(ctx context.Context, tx pgx.Tx, t *contract.Table) (bool, error) {
	key := sqlkit.QuoteTable(t)
	if has, ok := p.triggers[key]; ok {
		return has, nil
	}
	var feed []string
	for _, tg := range pgFeedTriggers {
		feed = append(feed, tg.name)
	}
	fn := pgFeedFuncName(t)
	if t.Schema != "" {
		fn = sqlkit.QuoteIdent(t.Schema) + "." + fn
	}
	// tgtype bits: 1 row, 2 before, 4 insert, 16 update, 64 instead of;
	// the feed's are AFTER … FOR EACH STATEMENT calling t's feed function
	// (as plainTable, copy.go, tells them).
	var has bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1)
		AND NOT tgisinternal AND tgtype & 20 <> 0
		AND NOT (tgname::text = ANY($2) AND tgfoid = to_regproc($3) AND tgtype & 67 = 0))`, key, feed, fn).Scan(&has)
	if err != nil {
		return false, err
	}
	if p.triggers == nil {
		p.triggers = map[string]bool{}
	}
	p.triggers[key] = has
	return has, nil
}

// dropped returns, in the page's transaction after its merge, the keys
// (pgKeyText's form) of the rows of the page the table does not hold as
// written although the merge succeeded: a key missing (a BEFORE INSERT
// trigger returned NULL, or an AFTER trigger deleted the row), or a
// stored row with another hash that the version guard, if any, would
// have let through (a BEFORE UPDATE trigger returned NULL, an AFTER one
// changed it). args are the merge's arguments (pgMergeSQL); only the key,
// version and hash arrays are sent again. Only for a table keepsOut
// reports.
func (p *Sink) dropped(ctx context.Context, tx pgx.Tx, t *contract.Table, types map[string]string, args []any) ([]string, error) {
	q, idx := pgDroppedSQL(t, types)
	sub := make([]any, len(idx))
	for i, j := range idx {
		sub[i] = args[j]
	}
	rows, err := tx.Query(ctx, q, sub...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// pgKeyText returns the expression rendering a row's key as one text,
// ROW(k1, k2 …)::text, over the key expressions val gives (by column
// name) or, with val nil, the columns of alias.
func pgKeyText(t *contract.Table, alias string, val map[string]string) string {
	keys := make([]string, len(t.Key))
	for i, k := range t.Key {
		if val != nil {
			keys[i] = val[k]
		} else {
			keys[i] = alias + "." + sqlkit.QuoteIdent(k)
		}
	}
	return "ROW(" + strings.Join(keys, ", ") + ")::text"
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
	return fmt.Sprintf(`SELECT %s FROM unnest(%s) AS u(%s)
LEFT JOIN %s AS %s ON %s
WHERE %s.%s IS NULL OR (%s)`,
		pgKeyText(t, "", val), strings.Join(params, ", "), strings.Join(names, ", "),
		sqlkit.QuoteTable(t), target, strings.Join(on, " AND "),
		target, sqlkit.QuoteIdent(t.Key[0]), refused), idx
}
