package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// Upsert writes rows in one transaction (see contract.Sink): the deduplicated
// page is sent as one array parameter per column and merged with one
// INSERT … SELECT … FROM unnest(…) ON CONFLICT (key) DO UPDATE … WHERE the stored hash
// (or, with t.Verify, a stored mapped column: pgVerifyTerms) differs (and,
// with t.Version set, the stored version is NULL or not newer) or the row
// is marked deleted (then only the mark is cleared when the version guard
// refuses the content),
// RETURNING (xmax = 0) to tell inserts from updates. Keys PostgreSQL deems
// equal ("1.0" and "1" in a numeric key) count as duplicates, so a page
// never fails with "cannot affect row a second time". Rows not inserted or
// updated count as Unchanged, except those the table does not hold as
// written after the statement (a trigger returned NULL): those count as
// Dropped. A page of a known table that can write nothing but rows found
// changed, all of them stored as is, opens no transaction at all
// (changedOutside).
//
// On error nothing is committed. Errors are *contract.Error: Transient for
// lost connections, serialization failures, deadlocks and server shutdown;
// Permanent for every other database error (with its SQLSTATE) and for a
// value that does not fit its column. A cancelled ctx is returned wrapped.
func (p *Sink) Upsert(ctx context.Context, t *contract.Table, rows []contract.Row) (contract.Counts, error) {
	return p.upsert(ctx, t, rows, nil)
}

// UpsertIn is Upsert calling before in the page's transaction just before
// its commit (contract.TxSink): a state in the same database commits the
// page's checkpoint there, a state elsewhere fences the page
// (docs/guarantees.md, "One transaction per page", "Fenced targets").
func (p *Sink) UpsertIn(ctx context.Context, t *contract.Table, rows []contract.Row, before func(context.Context, contract.PageTx, contract.Counts) error) (contract.Counts, error) {
	return p.upsert(ctx, t, rows, before)
}

func (p *Sink) upsert(ctx context.Context, t *contract.Table, rows []contract.Row, before func(context.Context, contract.PageTx, contract.Counts) error) (contract.Counts, error) {
	var n contract.Counts
	if len(rows) == 0 {
		return n, nil
	}
	op := "upsert into " + t.String()
	kept, _ := canonicalKeys(t, rows, keyForm)
	kept, tombs := splitTombstones(kept)
	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.connect(ctx)
	if err != nil {
		return n, err
	}
	// A page that can write nothing but the rows found changed is checked
	// outside any transaction first: unchanged, it is done without one
	// (unchanged.go).
	checked := false
	if before == nil {
		if changed, ok := p.changedOutside(ctx, conn, op, t, kept, tombs); ok {
			if len(changed) == 0 {
				n.Unchanged = int64(len(rows))
				return n, nil
			}
			kept, checked = changed, true
		}
	}
	var progress string
	var ptx *pageTx
	err = p.inTxOn(ctx, conn, op, commitTx, func(tx pgx.Tx) error {
		types, err := p.columnTypes(ctx, tx, t)
		if err != nil {
			return p.dbError(op, err)
		}
		if types, err = p.widen(ctx, tx, op, t, types); err != nil {
			return err
		}
		// Rows stored as they are leave the page first (unchanged.go), so
		// only the others are converted, encoded and sent to the merge.
		if !checked {
			if kept, err = p.leaveUnchanged(ctx, tx, op, t, types, kept); err != nil {
				return err
			}
		}
		deleted, err := p.bury(ctx, tx, op, t, types, tombs)
		if err != nil {
			return err
		}
		// What the page does to the child tables (children.go).
		var kidCounts contract.Counts
		if err := p.pruneTree(ctx, tx, op, t, types, tombs, true, &kidCounts); err != nil { // children.go
			return err
		}
		if err := p.writeChildren(ctx, tx, op, t, types, kept, &kidCounts); err != nil { // children.go, before the merge
			return err
		}
		copied := false
		if len(kept) > 0 {
			if copied, err = p.copyFresh(ctx, tx, op, t, types, kept); err != nil {
				return err
			}
			if copied {
				n.Inserted = int64(len(kept))
			}
		}
		if len(kept) > 0 && !copied {
			data, err := pageValues(op, t, kept)
			if err != nil {
				return err
			}
			args, err := mergeArgs(op, t, kept, data, types)
			if err != nil {
				return err
			}
			if err := p.checkFit(ctx, tx, op, t, types, args); err != nil {
				return err
			}
			if n, err = p.merge(ctx, tx, op, t, types, args, len(kept)); err != nil {
				return err
			}
		}
		n.Deleted, n.Children = deleted, kidCounts.Children
		n.Unchanged = int64(len(rows)) - n.Inserted - n.Updated - n.Dropped - n.Deleted
		if n.Wrote() { // a page that wrote nothing leaves the marker, and the target unwritten
			if progress, err = p.raiseProgress(ctx, tx, op, t); err != nil { // progress.go
				return err
			}
		}
		ptx = &pageTx{p: p, tx: tx, schema: t.Schema}
		if before != nil {
			return before(ctx, ptx, n)
		}
		return nil
	})
	if err != nil {
		return contract.Counts{}, err
	}
	if ptx.created != "" {
		p.fenced[ptx.created] = true
	}
	if progress != "" {
		p.progressed[progress] = true
	}
	return n, nil
}

// pageValues converts the values of the deduplicated rows to PostgreSQL's
// forms, each row followed by its hash. A row with the wrong number of
// values or a value that does not fit its column fails with Permanent.
func pageValues(op string, t *contract.Table, kept []contract.Row) ([][]any, error) {
	data := make([][]any, len(kept))
	// Each column's conversion, looked up once a page rather than once a
	// value (a map lookup by type name was 4% of a first load's CPU).
	conv := make([]func(any) (any, bool), len(t.Columns))
	for j := range t.Columns {
		conv[j] = typeOf(t.Columns[j].Type).value
	}
	for i, r := range kept {
		if err := rowWidth(op, t, r); err != nil {
			return nil, err
		}
		vals := make([]any, len(t.Columns)+1)
		for j, v := range r.Values {
			if v == nil {
				continue
			}
			out, ok := conv[j](v)
			if !ok {
				return nil, fmt.Errorf("%s: %w", op, sqlkit.ValueError(&t.Columns[j], v))
			}
			vals[j] = out
		}
		vals[len(t.Columns)] = r.Hash
		data[i] = vals
	}
	return data, nil
}

// rowWidth fails, with Permanent, a row with the wrong number of values.
func rowWidth(op string, t *contract.Table, r contract.Row) error {
	if len(r.Values) != len(t.Columns) {
		return contract.Errorf(contract.Permanent, "%s: row has %d values for %d columns", op, len(r.Values), len(t.Columns))
	}
	return nil
}

// mergeArgs returns the parameters of pgMergeSQL: one array parameter per
// column, unnested by the server, so the page is written once, with no
// temporary table. Columns of the type idemsync creates travel in binary;
// others as text cast to the column's type. The hashes and the synced-at
// time follow.
func mergeArgs(op string, t *contract.Table, kept []contract.Row, data [][]any, types map[string]string) ([]any, error) {
	args := make([]any, 0, len(t.Columns)+2)
	for j := range t.Columns {
		c := &t.Columns[j]
		if binaryParam(c, types) {
			args = append(args, binaryArray(c, data, j))
			continue
		}
		col := make([]*string, len(data))
		for i := range data {
			var err error
			if col[i], err = pgText(c, kept[i].Values[j]); err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
		}
		args = append(args, col)
	}
	hashes := make([]string, len(data))
	for i := range data {
		hashes[i] = data[i][len(t.Columns)].(string)
	}
	return append(args, hashes, t.Clock().UTC()), nil
}

// merge runs the merge statement in tx and counts the rows it inserted and
// updated, and, on a table whose triggers may keep rows out (keepsOut,
// dropped.go), those the table does not hold as written (Dropped): a row
// the statement reports written but an AFTER trigger deleted counts as
// Dropped, not Inserted or Updated. Database errors are translated by
// dbError.
func (p *Sink) merge(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, types map[string]string, args []any, kept int) (contract.Counts, error) {
	var n contract.Counts
	own, err := p.ownRowsOnly(ctx, tx, t)
	if err != nil {
		return n, p.dbError(op, err)
	}
	trig, err := p.keepsOut(ctx, tx, t)
	if err != nil {
		return n, p.dbError(op, err)
	}
	q := pgMergeSQL(t, types, !own)
	var written map[string]bool // with trig, each written row's key: inserted or updated
	if trig {
		q += ", " + pgKeyText(t, `"_t"`, nil) // the RETURNING list ends the statement
		written = map[string]bool{}
	}
	res, err := tx.Query(ctx, q, args...)
	if err != nil {
		return contract.Counts{}, p.mergeError(op, t, types, err)
	}
	for res.Next() {
		var inserted bool
		var key string
		dest := []any{&inserted}
		if trig {
			dest = append(dest, &key)
		}
		if err := res.Scan(dest...); err != nil {
			res.Close()
			return contract.Counts{}, p.dbError(op, err)
		}
		if trig {
			written[key] = inserted
		}
		if inserted {
			n.Inserted++
		} else {
			n.Updated++
		}
	}
	if err := res.Err(); err != nil {
		return contract.Counts{}, p.mergeError(op, t, types, err)
	}
	if own && n.Inserted < int64(kept) {
		p.own[sqlkit.QuoteTable(t)] = false
	}
	// Rows neither inserted nor updated are unchanged, and rows written
	// are in the table, unless the database kept them out (a trigger):
	// count those apart. Fewer rows written than sent on a table without
	// such a trigger at Prepare asks once more: one created since (a
	// BEFORE trigger returning NULL).
	if key := sqlkit.QuoteTable(t); !trig && n.Inserted+n.Updated < int64(kept) && !p.rechecked[key] {
		delete(p.triggers, key)
		if trig, err = p.keepsOut(ctx, tx, t); err != nil {
			return contract.Counts{}, p.dbError(op, err)
		}
		if p.rechecked == nil {
			p.rechecked = map[string]bool{}
		}
		p.rechecked[key] = true
	}
	if trig {
		keys, err := p.dropped(ctx, tx, t, types, args)
		if err != nil {
			return contract.Counts{}, p.dbError(op, err)
		}
		for _, k := range keys {
			n.Dropped++
			if inserted, ok := written[k]; ok && inserted {
				n.Inserted--
			} else if ok {
				n.Updated--
			}
		}
		// Asked again above, the written keys are unknown: rows counted
		// written and dropped count as dropped only.
		if excess := n.Inserted + n.Updated + n.Dropped - int64(kept); excess > 0 {
			d := min(excess, n.Inserted)
			n.Inserted -= d
			n.Updated -= min(excess-d, n.Updated)
		}
	}
	return n, nil
}

// pgMergeSQL returns the INSERT … ON CONFLICT statement writing a page into
// t: $1…$n are text arrays, one per column, $n+1 the hashes and $n+2 the
// synced-at time; types gives each column's type in the table. With
// filter, records stored unchanged are left out first (pgStoredAsIs).
func pgMergeSQL(t *contract.Table, types map[string]string, filter bool) string {
	const target = `"_t"`
	var cols, sels, params, names, content []string // content: the columns an update copies from the record
	for i, c := range t.Columns {
		q := sqlkit.QuoteIdent(c.Name)
		cols = append(cols, q)
		typ := types[c.Name]
		if typ == "" {
			typ = pgType(c.Type)
		}
		u := fmt.Sprintf("c%d", i)
		names = append(names, u)
		if binaryParam(&c, types) {
			params = append(params, fmt.Sprintf("$%d::%s[]", i+1, typ))
			sels = append(sels, "u."+u)
		} else {
			params = append(params, fmt.Sprintf("$%d::text[]", i+1))
			sels = append(sels, fmt.Sprintf("u.%s::%s", u, typ))
		}
		if !sqlkit.IsKey(t, c.Name) {
			content = append(content, q)
		}
	}
	n := len(t.Columns)
	params = append(params, fmt.Sprintf("$%d::text[]", n+1))
	names = append(names, "h")
	hash, synced := sqlkit.QuoteIdent(contract.ColHash), sqlkit.QuoteIdent(contract.ColSyncedAt)
	content = append(content, hash)
	// A row marked deleted when the job had deletes: soft is unmarked by
	// a write whatever deletes says now (docs/deletions.md).
	unmark := pgUnmarks(t, types)
	where := fmt.Sprintf("(%s.%s IS DISTINCT FROM EXCLUDED.%[2]s%s)", target, hash, pgVerifyTerms(t, target))
	guard := "" // with soft deletes, the version guard moves into the SET
	if t.Version != "" {
		guard = fmt.Sprintf("(%s.%s IS NULL OR EXCLUDED.%[2]s >= %[1]s.%[2]s)", target, sqlkit.QuoteIdent(t.Version))
		where += " AND " + guard
	}
	var sets []string
	for _, q := range content {
		if unmark && guard != "" {
			sets = append(sets, fmt.Sprintf("%[1]s = CASE WHEN %[2]s THEN EXCLUDED.%[1]s ELSE %[3]s.%[1]s END", q, guard, target))
		} else {
			sets = append(sets, fmt.Sprintf("%s = EXCLUDED.%[1]s", q))
		}
	}
	sets = append(sets, fmt.Sprintf("%s = EXCLUDED.%[1]s", synced))
	if unmark {
		// A marked row whose key came back is unmarked even when unchanged,
		// and whatever the version guard decides about its content
		// (docs/deletions.md): the guard chooses each column's value above,
		// not whether the row is written.
		del := sqlkit.QuoteIdent(contract.ColDeletedAt)
		sets = append(sets, del+" = NULL")
		where = fmt.Sprintf("(%s) OR %s.%s IS NOT NULL", where, target, del)
	}
	return fmt.Sprintf(`INSERT INTO %s AS %s (%s, %s, %s)
SELECT %s, u.h, $%d::timestamptz FROM unnest(%s) AS u(%s)%s
ON CONFLICT (%s) DO UPDATE SET %s
WHERE %s
RETURNING (%s.xmax = 0)`,
		sqlkit.QuoteTable(t), target, strings.Join(cols, ", "), hash, synced,
		strings.Join(sels, ", "), n+2, strings.Join(params, ", "), strings.Join(names, ", "), pgStoredAsIs(t, sels, filter, unmark),
		sqlkit.QuoteList(t.Key), strings.Join(sets, ", "),
		where,
		target)
}

// pgStoredAsIs returns the merge's filter that leaves out the records whose
// row is stored with the same hash (and, on a soft table, not marked):
// ON CONFLICT … DO UPDATE … WHERE locks the conflicting row before its
// WHERE refuses the update, and the lock is written (WAL, a dirty page),
// so an unchanged re-sync wrote for every row it did not change (issue
// 31: 10.7 MiB of WAL per 200,000 unchanged rows). Filtered out first,
// an unchanged row is only read. sels are the merge's select expressions
// (the page's values cast to the columns' types). A verifying run (t.Verify)
// leaves out only the records whose row also holds every other mapped
// column in the same stored form (pgVerifyTerms' comparison), so that a
// verify run of a table nobody touched locks and writes no row either.
func pgStoredAsIs(t *contract.Table, sels []string, filter, unmark bool) string {
	if !filter {
		return ""
	}
	const stored = `"_s"`
	var on []string
	for i, c := range t.Columns {
		switch q := sqlkit.QuoteIdent(c.Name); {
		case sqlkit.IsKey(t, c.Name):
			on = append(on, fmt.Sprintf("%s.%s = %s", stored, q, sels[i]))
		case t.Verify:
			on = append(on, fmt.Sprintf(`%s.%s::text COLLATE "C" IS NOT DISTINCT FROM (%s)::text`, stored, q, sels[i]))
		}
	}
	on = append(on, fmt.Sprintf("%s.%s = u.h", stored, sqlkit.QuoteIdent(contract.ColHash)))
	if unmark {
		on = append(on, fmt.Sprintf("%s.%s IS NULL", stored, sqlkit.QuoteIdent(contract.ColDeletedAt)))
	}
	return fmt.Sprintf("\nWHERE NOT EXISTS (SELECT 1 FROM %s AS %s WHERE %s)", sqlkit.QuoteTable(t), stored, strings.Join(on, " AND "))
}

// pgUnmarks reports whether a write into t clears the soft-delete mark:
// on a soft table, and on one that has the mark column (types: the
// table's columns) from when its job had deletes: soft.
func pgUnmarks(t *contract.Table, types map[string]string) bool {
	_, ok := types[contract.ColDeletedAt]
	return t.Soft() || ok
}

// columnTypes returns the type of each column of t as the server names it
// (format_type), cached until the next Prepare.
func (p *Sink) columnTypes(ctx context.Context, tx pgx.Tx, t *contract.Table) (map[string]string, error) {
	key := sqlkit.QuoteTable(t)
	if m, ok := p.types[key]; ok {
		return m, nil
	}
	rows, err := tx.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, key)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return nil, err
		}
		m[name] = typ
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if p.types == nil {
		p.types = map[string]map[string]string{}
	}
	p.types[key] = m
	return m, nil
}

// pgText is a value in PostgreSQL's text input form for its column (nil is
// NULL): exact decimals as written, floats in their shortest exact form,
// timestamps in RFC 3339 at microsecond precision.
func pgText(c *contract.Column, v any) (*string, error) {
	if v == nil {
		return nil, nil
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		s = strconv.FormatBool(x)
	case time.Time:
		s = x.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	default:
		return nil, sqlkit.ValueError(c, v)
	}
	return &s, nil
}
