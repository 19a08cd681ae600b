package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The change feed's tables (docs/changes.md), in the fed table's schema.
// idemsync_change_jobs holds, per feed, the last number handed out, the
// run its events belong to and how far pruning went.
//
// Numbers are allocated from that row, never from a sequence: the trigger
// updates it in the writing transaction, whose row lock makes every other
// writer of the feed wait until this one commits or rolls back. So a
// number is only handed out once every smaller number is committed or
// gone with its transaction, and a reader of "seq > last" never sees a
// number before a smaller one becomes visible (a sequence's values can
// commit out of order and such a reader would skip the late one forever).
//
// A write statement's events are one row of idemsync_change_packs,
// numbered seq..hi, their keys, hashes, versions and rows in arrays and
// their operations one letter each in ops: one row and one index entry
// per page instead of one per written row (docs/changes.md, "Cost").
// idemsync_events(job, after, n) expands a job's packs above a number (the
// readers' FROM item: contract.FeedDB.Events); the view idemsync_changes
// expands them all, one row per event, for people and tests. A feed
// created before packs (a table idemsync_changes of single events) is
// moved into packs of one.
const pgFeedDDL = `
CREATE TABLE IF NOT EXISTS idemsync_change_packs (
	job text NOT NULL, hi bigint NOT NULL, seq bigint NOT NULL, resource text NOT NULL, run bigint, at bigint NOT NULL,
	ops text NOT NULL, keys text[] NOT NULL, hashes text[], versions text[], rows text[],
	PRIMARY KEY (job, hi));
CREATE TABLE IF NOT EXISTS idemsync_change_jobs (
	job text PRIMARY KEY, last bigint NOT NULL DEFAULT 0, run bigint, pruned_through bigint NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS idemsync_change_consumers (
	job text NOT NULL, consumer text NOT NULL, acked bigint NOT NULL DEFAULT 0,
	batch text, batch_through bigint, lease_until bigint, acked_at bigint,
	PRIMARY KEY (job, consumer));
DO $idemsync_ddl$ BEGIN
	IF EXISTS (SELECT 1 FROM pg_class WHERE oid = to_regclass('idemsync_changes') AND relkind = 'r') THEN
		INSERT INTO idemsync_change_packs (job, hi, seq, resource, run, at, ops, keys, hashes, versions, rows)
			SELECT job, seq, seq, resource, run, at, op, ARRAY[key], ARRAY[hash], ARRAY[version], ARRAY[row] FROM idemsync_changes;
		DROP TABLE idemsync_changes;
	END IF;
	-- A pack's arrays are tens of kilobytes: pglz, the default, spent
	-- more than the rest of the feed compressing them; lz4 (PostgreSQL 14
	-- built with it) a tenth of that. Elsewhere the default stays.
	IF current_setting('server_version_num')::int >= 140000 AND EXISTS (SELECT 1 FROM pg_attribute
			WHERE attrelid = to_regclass('idemsync_change_packs') AND attname = 'keys' AND attcompression <> 'l') THEN
		BEGIN
			ALTER TABLE idemsync_change_packs ALTER keys SET COMPRESSION lz4, ALTER hashes SET COMPRESSION lz4,
				ALTER versions SET COMPRESSION lz4, ALTER rows SET COMPRESSION lz4;
		EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
			NULL;
		END;
	END IF;
	-- Each pack above p_after holds at least one event above it, so the
	-- first p_n packs hold the first p_n events: a reader far behind
	-- expands a batch's worth, not the whole backlog.
	IF to_regprocedure('idemsync_events(text, bigint, bigint)') IS NULL THEN
		CREATE FUNCTION idemsync_events(p_job text, p_after bigint, p_n bigint)
			RETURNS TABLE (seq bigint, resource text, key text, op text, hash text, version text, run bigint, "row" text, at bigint)
			LANGUAGE sql STABLE AS $f$
			SELECT p.seq + e.i - 1, p.resource, e.k, substr(p.ops, e.i::int, 1), e.h, e.v, p.run, e.r, p.at
			FROM (SELECT * FROM idemsync_change_packs q WHERE q.job = p_job AND q.hi > p_after ORDER BY q.hi LIMIT p_n) p
				CROSS JOIN LATERAL unnest(p.keys, p.hashes, p.versions, p.rows) WITH ORDINALITY AS e(k, h, v, r, i)
			WHERE p.seq + e.i - 1 > p_after $f$;
	END IF;
	IF to_regclass('idemsync_changes') IS NULL THEN
		CREATE VIEW idemsync_changes AS
			SELECT p.job, p.seq + e.i - 1 AS seq, p.resource, e.k AS key, substr(p.ops, e.i::int, 1) AS op, e.h AS hash,
				e.v AS version, p.run, e.r AS "row", p.at
			FROM idemsync_change_packs p CROSS JOIN LATERAL unnest(p.keys, p.hashes, p.versions, p.rows) WITH ORDINALITY AS e(k, h, v, r, i);
	END IF;
END $idemsync_ddl$;`

// pgFeedBody returns the body of t's feed trigger function, which every
// trigger of the table calls with the job and the resource as arguments.
// Statement-level with transition tables: one counter update and one
// pack per statement, none for a statement that changed no row (an
// unchanged re-sync locks nothing). It names t's key, hash and version
// columns (reading each row through jsonb cost twice as much). An UPDATE
// that sets the deletion mark (deletes: soft) is a 'D'. The aggregates of
// one SELECT see its rows in the same order, so the arrays and ops line
// up.
func pgFeedBody(t *contract.Table, sch string) string {
	col := func(rec, name string) string { return rec + "." + sqlkit.QuoteIdent(name) }
	key := func(rec string) string {
		if len(t.Key) == 1 {
			return col(rec, t.Key[0]) + "::text"
		}
		parts := make([]string, len(t.Key))
		for i, k := range t.Key {
			parts[i] = "to_json(" + col(rec, k) + ")::text"
		}
		return "'[' || " + strings.Join(parts, " || ',' || ") + " || ']'"
	}
	versions := func(rec string) string {
		if t.Version == "" {
			return "NULL"
		}
		return "array_agg(" + col(rec, t.Version) + "::text)"
	}
	rows, upd := "NULL", "repeat('U', count(*)::int)"
	if t.Changes.Rows {
		rows = "array_agg((to_jsonb(w) - '_idemsync_hash' - '_idemsync_synced_at' - '_idemsync_deleted_at')::text)"
	}
	if t.Soft() {
		upd = "string_agg(CASE WHEN " + col("w", contract.ColDeletedAt) + " IS NOT NULL THEN 'D' ELSE 'U' END, '')"
	}
	hash := sqlkit.QuoteIdent(contract.ColHash)
	return fmt.Sprintf(`
DECLARE
	n bigint;
	hi bigint;
	r bigint;
	ts bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
	v_ops text;
	v_keys text[];
	v_hashes text[];
	v_versions text[];
	v_rows text[];
BEGIN
	IF TG_OP = 'DELETE' THEN
		SELECT count(*), repeat('D', count(*)::int), array_agg(%[2]s), array_agg(o.%[3]s), %[4]s, NULL
			INTO n, v_ops, v_keys, v_hashes, v_versions, v_rows FROM old_rows o;
	ELSIF TG_OP = 'INSERT' THEN
		SELECT count(*), repeat('I', count(*)::int), array_agg(%[5]s), array_agg(w.%[3]s), %[6]s, %[7]s
			INTO n, v_ops, v_keys, v_hashes, v_versions, v_rows FROM new_rows w;
	ELSE
		SELECT count(*), %[8]s, array_agg(%[5]s), array_agg(w.%[3]s), %[6]s, %[7]s
			INTO n, v_ops, v_keys, v_hashes, v_versions, v_rows FROM new_rows w;
	END IF;
	IF n = 0 THEN
		RETURN NULL;
	END IF;
	INSERT INTO %[1]s.idemsync_change_jobs AS c (job, last) VALUES (TG_ARGV[0], n)
		ON CONFLICT (job) DO UPDATE SET last = c.last + n RETURNING c.last, c.run INTO hi, r;
	INSERT INTO %[1]s.idemsync_change_packs (job, hi, seq, resource, run, at, ops, keys, hashes, versions, rows)
		VALUES (TG_ARGV[0], hi, hi - n + 1, TG_ARGV[1], r, ts, v_ops, v_keys, v_hashes, v_versions, v_rows);
	RETURN NULL;
END
`, sch, key("o"), hash, versions("o"), key("w"), versions("w"), rows, upd)
}

// pgFeedFuncName is the name of t's feed trigger function: one per table
// (the name is a hash of the table's, which may be long).
func pgFeedFuncName(t *contract.Table) string {
	h := sha256.Sum256([]byte(t.Name))
	return "idemsync_feed_" + hex.EncodeToString(h[:8])
}

// pgFeedTriggers are the trigger names and their events.
var pgFeedTriggers = []struct{ name, event, ref string }{
	{"idemsync_feed_ins", "INSERT", "NEW TABLE AS new_rows"},
	{"idemsync_feed_upd", "UPDATE", "NEW TABLE AS new_rows"},
	{"idemsync_feed_del", "DELETE", "OLD TABLE AS old_rows"},
}

var _ contract.ChangeFeeder = (*Sink)(nil)

// FeedDB creates the feed's tables when missing and returns a
// database/sql handle on the sink's connection settings whose search_path
// is the feed's schema (t's, or the search_path's first when t.Schema is
// ""), opened on first use and closed by Close (see
// contract.ChangeFeeder).
func (p *Sink) FeedDB(ctx context.Context, t *contract.Table) (contract.FeedDB, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	op := "open the change feed"
	if p.feed == nil {
		p.feed = map[string]*sql.DB{}
	}
	db := p.feed[t.Schema]
	if db == nil {
		cfg := p.cfg.Copy()
		if t.Schema != "" {
			cfg.RuntimeParams["search_path"] = sqlkit.QuoteIdent(t.Schema)
		}
		db = stdlib.OpenDB(*cfg)
		db.SetMaxOpenConns(2)
		p.feed[t.Schema] = db
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return contract.FeedDB{}, p.dbError(op, err)
	}
	defer conn.Close()
	// Two first users would race CREATE TABLE IF NOT EXISTS on the catalog.
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtextextended('idemsync.feed', 0))`); err != nil {
		return contract.FeedDB{}, p.dbError(op, err)
	}
	_, err = conn.ExecContext(ctx, pgFeedDDL)
	_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended('idemsync.feed', 0))`)
	if err != nil {
		return contract.FeedDB{}, p.dbError(op, err)
	}
	return contract.FeedDB{DB: db, Param: func(n int) string { return fmt.Sprintf("$%d", n) }, ForUpdate: " FOR UPDATE",
		Events:         `idemsync_events(?, ?, ?)`,
		RecordedBefore: `SELECT max(hi) FROM idemsync_change_packs WHERE job = ? AND at < ?`,
		Delete:         `DELETE FROM idemsync_change_packs WHERE job = ? AND hi <= ?`,
		Clock:          `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint`}, nil
}

// closeFeed closes the handles FeedDB opened.
func (p *Sink) closeFeed() {
	for k, db := range p.feed {
		db.Close()
		delete(p.feed, k)
	}
}

// prepareFeed, in Prepare's transaction (which holds the table's prepare
// lock), installs t's feed triggers when t.Changes is set and stamps the
// feed with the run, or drops them when it is not. Triggers are created
// or replaced only when missing or different, so a Prepare of an
// unchanged table takes no lock a writer would wait for.
func prepareFeed(ctx context.Context, tx pgx.Tx, t *contract.Table, oid uint32) error {
	have := map[string][]byte{}
	if oid != 0 {
		rows, err := tx.Query(ctx, `SELECT tgname::text, tgargs FROM pg_trigger WHERE tgrelid = $1 AND tgname::text LIKE 'idemsync_feed_%'`, oid)
		if err != nil {
			return err
		}
		for rows.Next() {
			var name string
			var args []byte
			if err := rows.Scan(&name, &args); err != nil {
				rows.Close()
				return err
			}
			have[name] = args
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	tbl := sqlkit.QuoteTable(t)
	if t.Changes == nil {
		for name := range have {
			if _, err := tx.Exec(ctx, "DROP TRIGGER IF EXISTS "+sqlkit.QuoteIdent(name)+" ON "+tbl); err != nil {
				return err
			}
		}
		return nil
	}
	c := t.Changes
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('idemsync.feed', 0))`); err != nil {
		return err
	}
	schema := t.Schema
	if schema == "" {
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return err
		}
	}
	sch := sqlkit.QuoteIdent(schema)
	fn := sch + "." + pgFeedFuncName(t)
	body := pgFeedBody(t, sch)
	var src string
	if err := tx.QueryRow(ctx, `SELECT COALESCE((SELECT prosrc FROM pg_proc WHERE oid = to_regproc($1)), '')`, fn).Scan(&src); err != nil {
		return err
	}
	if src != body {
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+sch+"; "+pgFeedDDL); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE OR REPLACE FUNCTION "+fn+"() RETURNS trigger LANGUAGE plpgsql AS $idemsync_feed$"+body+"$idemsync_feed$"); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+sch+`.idemsync_change_jobs (job, run) VALUES ($1, $2)
		ON CONFLICT (job) DO UPDATE SET run = excluded.run`, c.Job, c.Run); err != nil {
		return err
	}
	args := []string{c.Job, c.Resource}
	var want []byte
	lits := make([]string, len(args))
	for i, a := range args {
		want = append(append(want, a...), 0)
		lits[i] = "'" + strings.ReplaceAll(a, "'", "''") + "'"
	}
	for _, tg := range pgFeedTriggers {
		if got, ok := have[tg.name]; ok && bytes.Equal(got, want) {
			continue
		}
		q := fmt.Sprintf("CREATE OR REPLACE TRIGGER %s AFTER %s ON %s REFERENCING %s FOR EACH STATEMENT EXECUTE FUNCTION %s(%s)",
			tg.name, tg.event, tbl, tg.ref, fn, strings.Join(lits, ", "))
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// feedHandles are the change feed's handles, by schema.
type feedHandles = map[string]*sql.DB
