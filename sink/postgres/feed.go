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

// The change feed's tables (docs/changes.md), in the fed table's schema. idemsync_change_jobs holds, per feed, the last number handed
// out, the run its events belong to and how far pruning went.
//
// Numbers are allocated from that row, never from a sequence: the trigger
// updates it in the writing transaction, whose row lock makes every other
// writer of the feed wait until this one commits or rolls back. So a
// number is only handed out once every smaller number is committed or
// gone with its transaction, and a reader of "seq > last" never sees a
// number before a smaller one becomes visible (a sequence's values can
// commit out of order and such a reader would skip the late one forever).
const pgFeedDDL = `
CREATE TABLE IF NOT EXISTS idemsync_changes (
	job text NOT NULL, seq bigint NOT NULL, resource text NOT NULL, key text NOT NULL, op text NOT NULL,
	hash text, version text, run bigint, row text, at bigint NOT NULL,
	PRIMARY KEY (job, seq));
CREATE TABLE IF NOT EXISTS idemsync_change_jobs (
	job text PRIMARY KEY, last bigint NOT NULL DEFAULT 0, run bigint, pruned_through bigint NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS idemsync_change_consumers (
	job text NOT NULL, consumer text NOT NULL, acked bigint NOT NULL DEFAULT 0,
	batch text, batch_through bigint, lease_until bigint, acked_at bigint,
	PRIMARY KEY (job, consumer));`

// pgFeedBody returns the body of t's feed trigger function, which every
// trigger of the table calls with the job and the resource as arguments.
// Statement-level with transition tables: one counter update per
// statement, none for a statement that changed no row (an unchanged
// re-sync locks nothing). It names t's key, hash and version columns
// (reading each row through jsonb cost twice as much). An UPDATE that
// sets the deletion mark (deletes: soft) is a 'D'.
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
	version := func(rec string) string {
		if t.Version == "" {
			return "NULL"
		}
		return col(rec, t.Version) + "::text"
	}
	row, upd := "NULL", "'U'"
	if t.Changes.Rows {
		row = "(to_jsonb(w) - '_idemsync_hash' - '_idemsync_synced_at' - '_idemsync_deleted_at')::text"
	}
	if t.Soft() {
		upd = "CASE WHEN " + col("w", contract.ColDeletedAt) + " IS NOT NULL THEN 'D' ELSE 'U' END"
	}
	ins := "INSERT INTO " + sch + ".idemsync_changes (job, seq, resource, key, op, hash, version, run, row, at)\n\t\t"
	return fmt.Sprintf(`
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
		%[2]sSELECT TG_ARGV[0], hi - n + row_number() OVER (), TG_ARGV[1], %[3]s, 'D', o.%[4]s, %[5]s, r, NULL, ts FROM old_rows o;
	ELSE
		%[2]sSELECT TG_ARGV[0], hi - n + row_number() OVER (), TG_ARGV[1], %[6]s,
			CASE WHEN TG_OP = 'INSERT' THEN 'I' ELSE %[7]s END, w.%[4]s, %[8]s, r, %[9]s, ts FROM new_rows w;
	END IF;
	RETURN NULL;
END
`, sch, ins, key("o"), sqlkit.QuoteIdent(contract.ColHash), version("o"), key("w"), upd, version("w"), row)
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
	return contract.FeedDB{DB: db, Param: func(n int) string { return fmt.Sprintf("$%d", n) }, ForUpdate: " FOR UPDATE"}, nil
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
