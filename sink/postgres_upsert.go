package sink

import (
	"context"
	"fmt"
	"strings"
	"time"

	idsync "github.com/idemsync/idemsync/sync"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgPageTable is the temporary table each page is copied into. It lives in
// pg_temp for one transaction (ON COMMIT DROP).
const pgPageTable = "_idemsync_page"

// Upsert writes rows in one transaction (see idsync.Sink): the deduplicated
// page is copied (COPY, binary) into a temporary table shaped like the
// target's columns, then merged with one
// INSERT … SELECT … ON CONFLICT (key) DO UPDATE … WHERE the stored hash
// differs (and, with t.Version set, the stored version is NULL or not newer),
// RETURNING (xmax = 0) to tell inserts from updates. Keys PostgreSQL deems
// equal ("1.0" and "1" in a numeric key) count as duplicates, so a page
// never fails with "cannot affect row a second time". Rows not inserted or
// updated count as Unchanged.
//
// On error nothing is committed. Errors are *idsync.Error: ExitTransient for
// lost connections, serialization failures, deadlocks and server shutdown;
// ExitPermanent for every other database error (with its SQLSTATE) and for a
// value that does not fit its column. A cancelled ctx is returned wrapped.
func (p *Postgres) Upsert(ctx context.Context, t *idsync.Table, rows []idsync.Row) (idsync.Counts, error) {
	var n idsync.Counts
	if len(rows) == 0 {
		return n, nil
	}
	op := "upsert into " + t.String()
	kept, _ := canonicalKeys(t, rows)
	data := make([][]any, len(kept))
	for i, r := range kept {
		if len(r.Values) != len(t.Columns) {
			return n, idsync.Errorf(idsync.ExitPermanent, "%s: row has %d values for %d columns", op, len(r.Values), len(t.Columns))
		}
		vals := make([]any, len(t.Columns)+1)
		for j := range t.Columns {
			v, err := pgValue(&t.Columns[j], r.Values[j])
			if err != nil {
				return n, fmt.Errorf("%s: %w", op, err)
			}
			vals[j] = v
		}
		vals[len(t.Columns)] = r.Hash
		data[i] = vals
	}
	cols := make([]string, 0, len(t.Columns)+1)
	for _, c := range t.Columns {
		cols = append(cols, c.Name)
	}
	cols = append(cols, idsync.ColHash)

	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.connect(ctx)
	if err != nil {
		return n, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return n, p.dbError(op, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	create := fmt.Sprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT %s FROM %s WITH NO DATA",
		QuoteIdent(pgPageTable), quoteList(cols), quoteTable(t))
	if _, err := tx.Exec(ctx, create); err != nil {
		return n, p.dbError(op, err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"pg_temp", pgPageTable}, cols, pgx.CopyFromRows(data)); err != nil {
		return n, p.dbError(op, err)
	}
	res, err := tx.Query(ctx, pgMergeSQL(t), time.Now().UTC())
	if err != nil {
		return n, p.dbError(op, err)
	}
	for res.Next() {
		var inserted bool
		if err := res.Scan(&inserted); err != nil {
			res.Close()
			return idsync.Counts{}, p.dbError(op, err)
		}
		if inserted {
			n.Inserted++
		} else {
			n.Updated++
		}
	}
	if err := res.Err(); err != nil {
		return idsync.Counts{}, p.dbError(op, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return idsync.Counts{}, p.dbError(op, err)
	}
	n.Unchanged = int64(len(rows)) - n.Inserted - n.Updated
	return n, nil
}

// pgMergeSQL returns the INSERT … ON CONFLICT statement moving the page from
// the temporary table into t; $1 is the synced-at time.
func pgMergeSQL(t *idsync.Table) string {
	const target = `"_t"`
	var cols, sets []string
	for _, c := range t.Columns {
		cols = append(cols, QuoteIdent(c.Name))
		if !isKey(t, c.Name) {
			sets = append(sets, fmt.Sprintf("%s = EXCLUDED.%[1]s", QuoteIdent(c.Name)))
		}
	}
	hash, synced := QuoteIdent(idsync.ColHash), QuoteIdent(idsync.ColSyncedAt)
	sets = append(sets, fmt.Sprintf("%s = EXCLUDED.%[1]s", hash), fmt.Sprintf("%s = EXCLUDED.%[1]s", synced))
	where := fmt.Sprintf("%s.%s IS DISTINCT FROM EXCLUDED.%[2]s", target, hash)
	if t.Version != "" {
		v := QuoteIdent(t.Version)
		where += fmt.Sprintf(" AND (%s.%s IS NULL OR EXCLUDED.%[2]s >= %[1]s.%[2]s)", target, v)
	}
	list := strings.Join(cols, ", ")
	return fmt.Sprintf(`INSERT INTO %s AS %s (%s, %s, %s)
SELECT %s, %s, $1::timestamptz FROM pg_temp.%s
ON CONFLICT (%s) DO UPDATE SET %s
WHERE %s
RETURNING (%s.xmax = 0)`,
		quoteTable(t), target, list, hash, synced,
		list, hash, QuoteIdent(pgPageTable),
		quoteList(t.Key), strings.Join(sets, ", "),
		where,
		target)
}

// pgValue converts an engine value to what pgx encodes for the column.
// Numerics become pgtype.Numeric built from the decimal digits, so no digit
// is lost; JSON text is sent as is.
func pgValue(c *idsync.Column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.Type {
	case idsync.TypeText:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case idsync.TypeInteger:
		if i, ok := asInt64(v); ok {
			return i, nil
		}
	case idsync.TypeReal:
		if f, ok := asFloat64(v); ok {
			return f, nil
		}
	case idsync.TypeNumeric:
		if s, ok := v.(string); ok {
			if d, ok := parseDecimal(s); ok {
				return pgtype.Numeric{Int: d.Int, Exp: d.Exp, Valid: true}, nil
			}
		}
	case idsync.TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case idsync.TypeTimestamp:
		if tm, ok := v.(time.Time); ok {
			return tm.UTC(), nil
		}
	case idsync.TypeJSON:
		if s, ok := asJSON(v); ok {
			return s, nil
		}
	}
	return nil, valueError(c, v)
}
