package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
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
// A write statement's events are rows of idemsync_change_packs of at
// most feedPack events each, numbered seq..hi, their keys, hashes,
// versions and rows in arrays and their operations one letter each in
// ops: one row and one index entry per page of 1,000 instead of one per
// written row (docs/changes.md, "Cost"). idemsync_events(job, after, n)
// is the readers' FROM item (contract.FeedDB.Events): the events after a
// number, at most n, expanded from the packs that hold them and only
// those (pgEventsBody); the view idemsync_changes expands them all, one
// row per event, for people and tests. A feed created before packs (a
// table idemsync_changes of single events) is moved into packs of one;
// packs written before they were cut at feedPack events (one per write
// statement, however large) are cut when the reader's function is
// replaced.
var pgFeedDDL = fmt.Sprintf(`
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
	IF (SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure('idemsync_events(text, bigint, bigint)')) IS DISTINCT FROM $idemsync_src$%[1]s$idemsync_src$ THEN
		-- Packs of an earlier build, one per write statement: cut into
		-- packs of %[2]d, or each batch read from one would expand all of
		-- it. Their events keep their numbers and order.
		WITH old AS (DELETE FROM idemsync_change_packs WHERE hi - seq >= %[2]d RETURNING *)
		INSERT INTO idemsync_change_packs (job, hi, seq, resource, run, at, ops, keys, hashes, versions, rows)
			SELECT o.job, o.seq + max(e.i) - 1, o.seq + min(e.i) - 1, o.resource, o.run, o.at, string_agg(substr(o.ops, e.i::int, 1), '' ORDER BY e.i),
				array_agg(e.k ORDER BY e.i),
				CASE WHEN o.hashes IS NULL THEN NULL ELSE array_agg(e.h ORDER BY e.i) END,
				CASE WHEN o.versions IS NULL THEN NULL ELSE array_agg(e.v ORDER BY e.i) END,
				CASE WHEN o.rows IS NULL THEN NULL ELSE array_agg(e.r ORDER BY e.i) END
			FROM old o CROSS JOIN LATERAL unnest(o.keys, o.hashes, o.versions, o.rows) WITH ORDINALITY AS e(k, h, v, r, i)
			GROUP BY o.job, o.hi, o.seq, o.resource, o.run, o.at, o.hashes IS NULL, o.versions IS NULL, o.rows IS NULL, (e.i - 1) / %[2]d;
		CREATE OR REPLACE FUNCTION idemsync_events(p_job text, p_after bigint, p_n bigint)
			RETURNS TABLE (seq bigint, resource text, key text, op text, hash text, version text, run bigint, "row" text, at bigint)
			LANGUAGE sql STABLE AS $idemsync_src$%[1]s$idemsync_src$;
	END IF;
	IF to_regclass('idemsync_changes') IS NULL THEN
		CREATE VIEW idemsync_changes AS
			SELECT p.job, p.seq + e.i - 1 AS seq, p.resource, e.k AS key, substr(p.ops, e.i::int, 1) AS op, e.h AS hash,
				e.v AS version, p.run, e.r AS "row", p.at
			FROM idemsync_change_packs p CROSS JOIN LATERAL unnest(p.keys, p.hashes, p.versions, p.rows) WITH ORDINALITY AS e(k, h, v, r, i);
	END IF;
END $idemsync_ddl$;`, pgEventsBody, feedPack)

// feedPack is the most events a pack holds: a batch read from the feed
// expands at most the packs it starts and ends in beyond its own events,
// however large the write statement was; a page of 1,000 rows (the
// default) is still one pack.
const feedPack = 1000

// pgEventsBody is idemsync_events(p_job, p_after, p_n): the events
// numbered above p_after, at most p_n, from the packs that hold them.
// Events are numbered without holes (the counter row), so they are the
// numbers p_after+1 .. p_after+p_n, or, past pruned numbers, that many
// from the first kept one; the packs holding them are an index range
// ending at the first pack that reaches the last (a read of every event,
// p_n the largest bigint, goes to the end), and only those packs' arrays
// and operations are read, each sliced to the numbers wanted. (An event's
// operation read by substr from a pack's whole ops, compressed, cost a
// decompression up to its position: a batch of 100 from the middle of
// a pack of 200,000 took more than 5 minutes.)
const pgEventsBody = `
	WITH b AS MATERIALIZED (
		SELECT least(greatest(p_after, (SELECT q.seq - 1 FROM idemsync_change_packs q WHERE q.job = p_job AND q.hi > p_after ORDER BY q.hi LIMIT 1))::numeric + p_n,
			9223372036854775807)::bigint AS last),
	p AS (
		SELECT q.*, greatest(q.seq, p_after + 1) - q.seq + 1 AS a, least(q.hi, b.last) - q.seq + 1 AS z,
			substr(q.ops, (greatest(q.seq, p_after + 1) - q.seq + 1)::int, (least(q.hi, b.last) - greatest(q.seq, p_after + 1) + 1)::int) AS o
		FROM b JOIN idemsync_change_packs q ON q.job = p_job AND q.hi > p_after AND q.seq <= b.last
			AND q.hi <= COALESCE((SELECT r.hi FROM idemsync_change_packs r WHERE r.job = p_job AND r.hi >= b.last ORDER BY r.hi LIMIT 1), b.last))
	SELECT p.seq + p.a + e.i - 2, p.resource, e.k, substr(p.o, e.i::int, 1), e.h, e.v, p.run, e.r, p.at
	FROM p CROSS JOIN LATERAL unnest(p.keys[p.a:p.z], p.hashes[p.a:p.z], p.versions[p.a:p.z], p.rows[p.a:p.z]) WITH ORDINALITY AS e(k, h, v, r, i)
`

// pgFeedBody returns the body of t's feed trigger function, which every
// trigger of the table calls with the job and the resource as arguments.
// Statement-level with transition tables: one counter update and a pack
// per feedPack rows per statement, none for a statement that changed no
// row (an unchanged re-sync locks nothing). It names t's key, hash and
// version columns (reading each row through jsonb cost twice as much). An
// UPDATE that sets the deletion mark (deletes: soft) is a 'D'. The
// aggregates of one group see its rows in the same order, so a pack's
// arrays and ops line up; the groups are cut by the rows' position in the
// transition table, so pack g holds the numbers after g*feedPack.
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
		rows = "array_agg((to_jsonb(w) - '_idemsync_hash' - '_idemsync_synced_at' - '_idemsync_deleted_at' - '_idemsync_pack')::text)"
	}
	if t.Soft() {
		upd = "string_agg(CASE WHEN " + col("w", contract.ColDeletedAt) + " IS NOT NULL THEN 'D' ELSE 'U' END, '')"
	}
	hash := sqlkit.QuoteIdent(contract.ColHash)
	// packs(rec, from) is the pack rows of the transition table from,
	// aliased rec, with the operations ops: hi and seq count from the
	// counter's new value.
	packs := func(rec, from, ops, versions, rows string) string {
		return fmt.Sprintf(`INSERT INTO %[1]s.idemsync_change_packs (job, hi, seq, resource, run, at, ops, keys, hashes, versions, rows)
			SELECT TG_ARGV[0], hi - n + least(%[2]s._idemsync_pack * %[3]d + %[3]d, n), hi - n + %[2]s._idemsync_pack * %[3]d + 1, TG_ARGV[1], r, ts,
				%[4]s, array_agg(%[5]s), array_agg(%[2]s.%[6]s), %[7]s, %[8]s
			FROM (SELECT *, (row_number() OVER () - 1) / %[3]d AS _idemsync_pack FROM %[9]s) %[2]s GROUP BY %[2]s._idemsync_pack;`,
			sch, rec, feedPack, ops, key(rec), hash, versions, rows, from)
	}
	// The packs' SELECT reads the table's columns beside the variables,
	// always qualified: a column named n or hi is not the variable.
	return fmt.Sprintf(`#variable_conflict use_variable
DECLARE
	n bigint;
	hi bigint;
	r bigint;
	ts bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
BEGIN
	IF TG_OP = 'DELETE' THEN
		SELECT count(*) INTO n FROM old_rows;
	ELSE
		SELECT count(*) INTO n FROM new_rows;
	END IF;
	IF n = 0 THEN
		RETURN NULL;
	END IF;
	INSERT INTO %[1]s.idemsync_change_jobs AS c (job, last) VALUES (TG_ARGV[0], n)
		ON CONFLICT (job) DO UPDATE SET last = c.last + n RETURNING c.last, c.run INTO hi, r;
	IF TG_OP = 'DELETE' THEN
		%[2]s
	ELSIF TG_OP = 'INSERT' THEN
		%[3]s
	ELSE
		%[4]s
	END IF;
	RETURN NULL;
END
`, sch, packs("o", "old_rows", "repeat('D', count(*)::int)", versions("o"), "NULL"),
		packs("w", "new_rows", "repeat('I', count(*)::int)", versions("w"), rows),
		packs("w", "new_rows", upd, versions("w"), rows))
}

// pgFeedFuncName is the name of t's feed trigger function: one per table
// (the name is a hash of the table's, which may be long).
func pgFeedFuncName(t *contract.Table) string {
	h := sha256.Sum256([]byte(t.Name))
	return "idemsync_feed_" + hex.EncodeToString(h[:8])
}

// pgFeedFuncConfig are the settings of a table's feed trigger function, as
// pg_proc.proconfig keeps them. Besides the grouping's, they fix what
// renders a key, a version and a row as text: the writing session's
// TimeZone and DateStyle made one timestamp key three texts (one per
// writer), and its extra_float_digits below 1 made two real keys one
// (docs/changes.md, Events). These are a UTC session's defaults, so
// the texts are those such a session recorded before.
var pgFeedFuncConfig = []string{"enable_hashagg=off", "TimeZone=UTC", "DateStyle=ISO, MDY", "extra_float_digits=1"}

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
		Clock:          `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint`,
		Last:           `SELECT COALESCE(max(last), 0) FROM idemsync_change_jobs WHERE job = ?`,
		Dense:          true}, nil
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
	if err := sharedFeed(t, pgTriggerJob(have)); err != nil {
		return err
	}
	if t.Changes == nil {
		if job := pgTriggerJob(have); job != "" && t.FeedJob != "" && job != t.FeedJob {
			return nil // another job's feed, on a table the jobs share
		}
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
	// One table records a resource into a job's feed: two job files of
	// one name writing two tables of the schema would record the same
	// resource, keys and ledger keys (docs/changes.md).
	var other string
	err := tx.QueryRow(ctx, `SELECT c.relname::text FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
		WHERE g.tgname::text LIKE 'idemsync_feed_%' AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1)
		AND g.tgrelid <> $2 AND g.tgargs = $3 LIMIT 1`, schema, oid, []byte(c.Job+"\x00"+c.Resource+"\x00")).Scan(&other)
	if err == nil {
		return &contract.Error{Class: contract.Invalid,
			Msg:  fmt.Sprintf("table %s records resource %s into the change feed of job %s: table %s cannot record it too (its events would be the other table's, same resource, keys and ledger keys)", other, c.Resource, c.Job, t),
			Hint: fmt.Sprintf("two job files named %s write to this schema: give each its own name:; or, when table %s is no longer written (a resource moved to another table), drop its idemsync_feed_ triggers", c.Job, other)}
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	sch := sqlkit.QuoteIdent(schema)
	fn := sch + "." + pgFeedFuncName(t)
	body := pgFeedBody(t, sch)
	var same bool
	if err := tx.QueryRow(ctx, `SELECT COALESCE((SELECT prosrc = $2 AND proconfig = $3 FROM pg_proc WHERE oid = to_regproc($1)), false)`,
		fn, body, pgFeedFuncConfig).Scan(&same); err != nil {
		return err
	}
	if !same {
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+sch+"; "+pgFeedDDL); err != nil {
			return err
		}
		// Grouping a large statement's rows into packs by hashing spilled
		// the packs' arrays to disk (and took longer than the whole
		// statement's one pack did); sorted, the groups are built one at a
		// time.
		// The function's own settings, not the writing session's, render
		// the keys, versions and rows it records (pgFeedFuncConfig).
		set := ""
		for _, c := range pgFeedFuncConfig {
			name, value, _ := strings.Cut(c, "=")
			set += " SET " + name + " = '" + value + "'" // constants with no quote
		}
		if _, err := tx.Exec(ctx, "CREATE OR REPLACE FUNCTION "+fn+"() RETURNS trigger LANGUAGE plpgsql"+set+" AS $idemsync_feed$"+body+"$idemsync_feed$"); err != nil {
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

// pgTriggerJob is the job whose feed t's feed triggers (have: their
// names and arguments) record into, "" when it has none.
func pgTriggerJob(have map[string][]byte) string {
	for _, args := range have {
		if job, _, ok := bytes.Cut(args, []byte{0}); ok {
			return string(job)
		}
	}
	return ""
}

// sharedFeed refuses a feed of t's job on a table whose triggers record
// into another job's feed (job, "" when none): jobs with deletes: keep
// share a table (docs/deletions.md), but its events go to one feed, and
// replacing the triggers would take the rest of the other job's run out
// of its feed (docs/changes.md).
func sharedFeed(t *contract.Table, job string) error {
	if t.Changes == nil || job == "" || job == t.Changes.Job {
		return nil
	}
	return &contract.Error{Class: contract.Invalid,
		Msg:  fmt.Sprintf("table %s keeps the change feed of job %s: job %s cannot keep its own there (one table feeds one job)", t, job, t.Changes.Job),
		Hint: fmt.Sprintf("give job %s its own target.table, or leave target.changes to job %s (its consumers see every write to the table); to hand the feed over, turn target.changes off in job %s and run it once (a job renamed: drop the table's idemsync_feed_ triggers)", t.Changes.Job, job, job)}
}

// feedHandles are the change feed's handles, by schema.
type feedHandles = map[string]*sql.DB
