package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// The change feed's tables (docs/changes.md). Events are numbered by
// AUTOINCREMENT: SQLite has one writer at a time (every write transaction
// begins IMMEDIATE), so numbers are handed out in commit order, and
// AUTOINCREMENT never reuses a number, even after pruning. idemsync_change_jobs
// holds, per feed, the run its events belong to and how far pruning went.
const sqliteFeedDDL = `
CREATE TABLE IF NOT EXISTS idemsync_changes (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	job TEXT NOT NULL, resource TEXT NOT NULL, key TEXT NOT NULL, op TEXT NOT NULL,
	hash TEXT, version TEXT, run INTEGER, row TEXT, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS idemsync_change_jobs (
	job TEXT PRIMARY KEY, run INTEGER, pruned_through INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS idemsync_change_consumers (
	job TEXT NOT NULL, consumer TEXT NOT NULL, acked INTEGER NOT NULL DEFAULT 0,
	batch TEXT, batch_through INTEGER, lease_until INTEGER, acked_at INTEGER,
	PRIMARY KEY (job, consumer));`

// sqliteNowMs is the current time in Unix milliseconds, in SQL.
const sqliteNowMs = `CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`

var _ contract.ChangeFeeder = (*Sink)(nil)

// FeedDB creates the feed's tables when missing and returns the sink's
// own handle (see contract.ChangeFeeder).
func (s *Sink) FeedDB(ctx context.Context, _ *contract.Table) (contract.FeedDB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.db.ExecContext(ctx, sqliteFeedDDL); err != nil {
		return contract.FeedDB{}, s.wrap("create the change feed's tables", err)
	}
	return contract.FeedDB{DB: s.db, Param: func(int) string { return "?" },
		Events:         `(SELECT seq, resource, key, op, hash, version, run, row, at FROM idemsync_changes WHERE job = ? AND seq > ? ORDER BY seq LIMIT ?)`,
		RecordedBefore: `SELECT max(seq) FROM idemsync_changes WHERE job = ? AND at < ?`,
		Delete:         `DELETE FROM idemsync_changes WHERE job = ? AND seq <= ?`,
		Last:           `SELECT COALESCE(max(seq), 0) FROM sqlite_sequence WHERE name = 'idemsync_changes' AND ? IS NOT NULL`}, nil
}

// prepareFeed, in Prepare's transaction, installs t's feed triggers when
// t.Changes is set (replacing triggers of another column set or run) and
// stamps the feed with the run, or drops the triggers when it is not.
// Triggers are persistent (a connection lost between pages loses no
// event) and fire only on what the sink's writes change: an INSERT, an
// UPDATE that sets the hash or the deletion mark (a widening or key
// migration sets neither), a DELETE.
//
// The run is a literal of the trigger's SQL, not a lookup per row (that
// lookup was a tenth to a quarter of what the feed added to a first
// load, docs/performance.md): the triggers are replaced when the run changes,
// those of the job's other tables too (restampFeed), so that every write
// after a Prepare, by the sink or another tool, in any table of the job,
// carries that Prepare's run (docs/changes.md). idemsync_change_jobs
// keeps the run as well, for triggers of an earlier build not yet replaced.
func prepareFeed(ctx context.Context, tx *sql.Tx, t *contract.Table) error {
	want := map[string]string{}
	if t.Changes != nil {
		want = sqliteFeedTriggers(t)
		if _, err := tx.ExecContext(ctx, sqliteFeedDDL); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO idemsync_change_jobs (job, run) VALUES (?, ?)
			ON CONFLICT (job) DO UPDATE SET run = excluded.run`, t.Changes.Job, t.Changes.Run); err != nil {
			return err
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE AND name LIKE 'idemsync_feed_%'`, t.Name)
	if err != nil {
		return err
	}
	have := map[string]string{}
	for rows.Next() {
		var name, q string
		if err := rows.Scan(&name, &q); err != nil {
			rows.Close()
			return err
		}
		have[name] = q
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	job := ""
	for _, q := range have {
		job = sqliteTriggerJob(q)
	}
	if t.Changes == nil && job != "" && t.FeedJob != "" && job != t.FeedJob {
		return nil // another job's feed, on a table the jobs share
	}
	if t.Changes != nil && job != "" && job != t.Changes.Job {
		return &contract.Error{Class: contract.Invalid,
			Msg:  fmt.Sprintf("table %s keeps the change feed of job %s: job %s cannot keep its own there (one table feeds one job)", t, job, t.Changes.Job),
			Hint: fmt.Sprintf("give job %s its own target.table, or leave target.changes to job %s (its consumers see every write to the table); to hand the feed over, turn target.changes off in job %s and run it once (a job renamed: drop the table's idemsync_feed_ triggers)", t.Changes.Job, job, job)}
	}
	if err := oneTablePerResource(ctx, tx, t); err != nil {
		return err
	}
	for name, q := range have {
		if want[name] != q {
			if _, err := tx.ExecContext(ctx, "DROP TRIGGER "+sqlkit.QuoteIdent(name)); err != nil {
				return err
			}
		}
	}
	for name, q := range want {
		if have[name] != q {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
	}
	if t.Changes == nil {
		return nil
	}
	return restampFeed(ctx, tx, t)
}

// oneTablePerResource refuses a feed of t's resource when another table's
// triggers record that resource into the same job's feed: two job files
// of one name (a single-resource job's resource is its name) writing two
// tables of one database, whose events a consumer could not tell apart,
// the same key and content giving the same ledger key (docs/changes.md).
func oneTablePerResource(ctx context.Context, tx *sql.Tx, t *contract.Table) error {
	if t.Changes == nil {
		return nil
	}
	var other string
	err := tx.QueryRowContext(ctx, `SELECT tbl_name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'idemsync_feed_%' AND tbl_name <> ? COLLATE NOCASE AND instr(sql, ?) > 0 AND instr(sql, ?) > 0 LIMIT 1`,
		t.Name, feedEventHead, ", "+quoteLiteral(t.Changes.Job)+", "+quoteLiteral(t.Changes.Resource)+", ").Scan(&other)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return sameResource(t, other)
}

// sameResource is the refusal of a feed of t's resource that table other
// records already.
func sameResource(t *contract.Table, other string) error {
	c := t.Changes
	return &contract.Error{Class: contract.Invalid,
		Msg:  fmt.Sprintf("table %s records resource %s into the change feed of job %s: table %s cannot record it too (its events would be the other table's, same resource, keys and ledger keys)", other, c.Resource, c.Job, t),
		Hint: fmt.Sprintf("two job files named %s write to this database: give each its own name:; or, when table %s is no longer written (a resource moved to another table), drop its idemsync_feed_ triggers", c.Job, other)}
}

// sqliteTriggerJob is the job whose feed a feed trigger's SQL records
// into, "" when it is not in the form sqliteFeedTriggers writes: after
// feedEventHead, the run, then the job as a literal.
func sqliteTriggerJob(q string) string {
	i := strings.Index(q, feedEventHead)
	if i < 0 {
		return ""
	}
	rest := q[i+len(feedEventHead):]
	n := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if n <= 0 || !strings.HasPrefix(rest[n:], ", '") {
		return ""
	}
	rest = rest[n+3:]
	var b strings.Builder
	for {
		j := strings.IndexByte(rest, '\'')
		if j < 0 {
			return ""
		}
		b.WriteString(rest[:j])
		if !strings.HasPrefix(rest[j:], "''") {
			return b.String()
		}
		b.WriteByte('\'')
		rest = rest[j+2:]
	}
}

// feedEventHead begins every event insert of the feed triggers; the
// run follows it, then the job: restampFeed finds the run there.
const feedEventHead = `INSERT INTO idemsync_changes (run, job, resource, key, op, hash, version, row, at) VALUES (`

// restampFeed replaces the feed triggers of t's job on its other tables
// whose run is not t's: the run of a job's events is the run of its last
// Prepare, whichever of its tables that was (docs/changes.md).
func restampFeed(ctx context.Context, tx *sql.Tx, t *contract.Table) error {
	run := strconv.FormatInt(t.Changes.Run, 10)
	job := ", " + quoteLiteral(t.Changes.Job) + ", "
	rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'idemsync_feed_%' AND tbl_name <> ? COLLATE NOCASE AND instr(sql, ?) > 0`, t.Name, feedEventHead)
	if err != nil {
		return err
	}
	stale := map[string]string{}
	for rows.Next() {
		var name, q string
		if err := rows.Scan(&name, &q); err != nil {
			rows.Close()
			return err
		}
		i := strings.Index(q, feedEventHead) + len(feedEventHead)
		n := strings.IndexFunc(q[i:], func(r rune) bool { return r < '0' || r > '9' })
		if n <= 0 || !strings.HasPrefix(q[i+n:], job) || q[i:i+n] == run {
			continue // another job's trigger, or already stamped
		}
		stale[name] = q[:i] + run + q[i+n:]
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for name, q := range stale {
		if _, err := tx.ExecContext(ctx, "DROP TRIGGER "+sqlkit.QuoteIdent(name)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// sqliteFeedTriggers returns t's feed triggers, by name, as sqlite_schema
// keeps their SQL.
func sqliteFeedTriggers(t *contract.Table) map[string]string {
	c := t.Changes
	tbl := sqlkit.QuoteIdent(t.Name)
	event := func(rec, op string) string {
		key := "CAST(" + rec + "." + sqlkit.QuoteIdent(t.Key[0]) + " AS TEXT)"
		if len(t.Key) > 1 {
			parts := make([]string, len(t.Key))
			for i, k := range t.Key {
				parts[i] = rec + "." + sqlkit.QuoteIdent(k)
			}
			key = "json_array(" + strings.Join(parts, ", ") + ")"
		}
		version := "NULL"
		if t.Version != "" {
			version = "CAST(" + rec + "." + sqlkit.QuoteIdent(t.Version) + " AS TEXT)"
		}
		row := "NULL"
		if c.Rows && rec == "NEW" {
			var kv []string
			for _, col := range t.Columns {
				kv = append(kv, quoteLiteral(col.Name), rec+"."+sqlkit.QuoteIdent(col.Name))
			}
			row = "json_object(" + strings.Join(kv, ", ") + ")"
		}
		job := quoteLiteral(c.Job)
		return fmt.Sprintf(`%s%d, %s, %s, %s, %s, %s.%s, %s, %s, %s);`,
			feedEventHead, c.Run, job, quoteLiteral(c.Resource), key, op, rec, sqlkit.QuoteIdent(contract.ColHash), version, row, sqliteNowMs)
	}
	name := func(op string) string { return "idemsync_feed_" + op + "_" + t.Name }
	updOf, updOp := sqlkit.QuoteIdent(contract.ColHash), "'U'"
	if t.Soft() {
		del := sqlkit.QuoteIdent(contract.ColDeletedAt)
		updOf += ", " + del
		updOp = "CASE WHEN NEW." + del + " IS NOT NULL THEN 'D' ELSE 'U' END"
	}
	return map[string]string{
		name("ins"): fmt.Sprintf("CREATE TRIGGER %s AFTER INSERT ON %s BEGIN %s END", sqlkit.QuoteIdent(name("ins")), tbl, event("NEW", "'I'")),
		name("upd"): fmt.Sprintf("CREATE TRIGGER %s AFTER UPDATE OF %s ON %s BEGIN %s END", sqlkit.QuoteIdent(name("upd")), updOf, tbl, event("NEW", updOp)),
		name("del"): fmt.Sprintf("CREATE TRIGGER %s AFTER DELETE ON %s BEGIN %s END", sqlkit.QuoteIdent(name("del")), tbl, event("OLD", "'D'")),
	}
}
