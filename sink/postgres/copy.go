package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A first load into an empty table is written with COPY instead of the
// merge (docs/performance.md, "COPY into an empty table"): the merge's
// speculative insertion (ON CONFLICT) writes more WAL and costs more CPU
// on both sides than COPY's batched inserts, and into a table holding
// only rows this sink inserted into it empty (fresh.go) every record of
// a page is an insert unless a later page lists a key again. COPY runs
// under a savepoint in the page's transaction: when it fails — a key met
// again (unique violation), or any value the server refuses — the page is
// rolled back to the savepoint and written by the merge, which decides
// for the key met again and reports a refused value as it always does;
// COPY is then off for the table until the next Prepare. A crash
// mid-COPY loses the page's transaction whole, as for the merge.
//
// COPY is only used where it does exactly what the merge would:
//   - not with a trigger or rule on the table other than the change
//     feed's (COPY ignores rules; a BEFORE trigger may keep a row out,
//     which the merge counts as Dropped). The feed's triggers (feed.go)
//     are AFTER … FOR EACH STATEMENT: COPY fires its INSERT trigger once
//     with the copied rows as the transition table, so the page's events
//     are one pack numbered by the same counter row as the merge's, in
//     the COPY's savepoint: a COPY rolled back leaves no event and the
//     merge then records the page's (docs/changes.md, "Cost");
//   - not for a verifying run (ownRowsOnly is false then);
//   - only when every column has the type idemsync creates (binaryParam,
//     or jsonb for json), so that the values are encoded in binary as
//     pgx encodes the merge's (copyenc.go).

// copySavepoint is the savepoint a page's COPY runs under.
const copySavepoint = "idemsync_copy"

// copyFresh writes the deduplicated page kept with COPY when t holds only
// rows this sink inserted into it empty, and reports whether it did;
// false leaves the transaction as it found it, for the merge. The page
// is sent in COPY's binary format as copyPage builds it; a value its
// column cannot take fails the page as the merge's conversion does.
func (p *Sink) copyFresh(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, types map[string]string, kept []contract.Row) (bool, error) {
	if !copyTypes(t, types) {
		return false, nil
	}
	own, err := p.ownRowsOnly(ctx, tx, t)
	if err != nil || !own {
		return false, p.errOrNil(op, err)
	}
	key := sqlkit.QuoteTable(t)
	plain, err := p.plainTable(ctx, tx, t, key)
	if err != nil || !plain {
		return false, p.errOrNil(op, err)
	}
	stream, err := copyPage(p.copyBuf[:0], op, t, kept, t.Clock())
	if err != nil {
		return false, err
	}
	if cap(stream) <= copyBufKept {
		p.copyBuf = stream
	}
	if _, err := tx.Exec(ctx, "SAVEPOINT "+copySavepoint); err != nil {
		return false, p.dbError(op, err)
	}
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(stream), copySQL(t))
	n := tag.RowsAffected()
	if err == nil && n == int64(len(kept)) {
		p.logger.Debug("copied a page into a table holding only rows this run inserted", "table", t.String(), "rows", n)
		return true, nil
	}
	var pgErr *pgconn.PgError
	if err != nil && !errors.As(err, &pgErr) {
		return false, p.dbError(op, err) // the connection, a cancelled ctx: the page fails
	}
	// A key met again, a value refused: the merge writes the page.
	if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+copySavepoint); err != nil {
		return false, p.dbError(op, err)
	}
	why := fmt.Sprintf("copied %d of %d rows", n, len(kept))
	if pgErr != nil {
		why = "postgres error " + pgErr.Code + ": " + p.scrub(pgErr.Message)
	}
	p.logger.Debug("COPY refused the page: the merge writes it, and every later page until the next prepare", "table", t.String(), "why", why)
	p.own[key] = false
	return false, nil
}

// copyBufKept bounds the buffer of a page's COPY stream the sink keeps
// for the next page: pages of usual sizes reuse it, a huge one's is
// left to the collector.
const copyBufKept = 4 << 20

// copySQL is the COPY statement of a page into t: its columns, the hash
// and the synced-at time, in copyPage's order.
func copySQL(t *contract.Table) string {
	var b strings.Builder
	b.WriteString("COPY " + sqlkit.QuoteTable(t) + " (")
	for _, c := range t.Columns {
		b.WriteString(sqlkit.QuoteIdent(c.Name) + ", ")
	}
	b.WriteString(sqlkit.QuoteIdent(contract.ColHash) + ", " + sqlkit.QuoteIdent(contract.ColSyncedAt) + ") FROM STDIN BINARY")
	return b.String()
}

// errOrNil is dbError(op, err), nil for a nil err.
func (p *Sink) errOrNil(op string, err error) error {
	if err == nil {
		return nil
	}
	return p.dbError(op, err)
}

// copyTypes reports whether every column of t, the hash and the
// synced-at time have the types idemsync creates them with.
func copyTypes(t *contract.Table, types map[string]string) bool {
	for i := range t.Columns {
		c := &t.Columns[i]
		if !binaryParam(c, types) && !(c.Type == contract.TypeJSON && types[c.Name] == "jsonb") {
			return false
		}
	}
	return types[contract.ColHash] == "text" && types[contract.ColSyncedAt] == "timestamp with time zone"
}

// plainTable reports whether the table (t, quoted as key) has no rule
// and no trigger but, when t.Changes is set, the feed's own (AFTER …
// FOR EACH STATEMENT, calling t's feed function), asking once until the
// next Prepare.
func (p *Sink) plainTable(ctx context.Context, tx pgx.Tx, t *contract.Table, key string) (bool, error) {
	if plain, ok := p.plain[key]; ok {
		return plain, nil
	}
	var feed []string
	fn := pgFeedFuncName(t)
	if t.Schema != "" {
		fn = sqlkit.QuoteIdent(t.Schema) + "." + fn
	}
	if t.Changes != nil {
		for _, tg := range pgFeedTriggers {
			feed = append(feed, tg.name)
		}
	}
	// tgtype: bit 0 a row trigger, bit 1 BEFORE, bit 6 INSTEAD OF.
	var plain bool
	err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND NOT tgisinternal
			AND NOT (tgname::text = ANY($2) AND tgfoid = to_regproc($3) AND tgtype & 67 = 0))
		AND NOT EXISTS (SELECT 1 FROM pg_rewrite WHERE ev_class = to_regclass($1))`, key, feed, fn).Scan(&plain)
	if err != nil {
		return false, err
	}
	if p.plain == nil {
		p.plain = map[string]bool{}
	}
	p.plain[key] = plain
	return plain, nil
}
