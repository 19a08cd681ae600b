package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	idsync "github.com/idemsync/idemsync/sync"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLiteBusyTimeout is how long a write waits for another process's lock on
// the SQLite file before failing with a transient error.
const SQLiteBusyTimeout = 10 * time.Second

// SQLite is the embedded SQLite sink (modernc.org/sqlite, no cgo). It keeps
// one connection open, in WAL mode with synchronous=FULL, and writes each page
// in one BEGIN IMMEDIATE transaction.
//
// Type mapping (SQLite has storage classes, not types; the declared type
// only sets a column's affinity):
//
//	text      TEXT
//	integer   INTEGER
//	real      REAL
//	numeric   TEXT, the exact decimal as given ("12.50"). NUMERIC affinity
//	          would turn it into a REAL or INTEGER and lose digits
//	          ("12345678901234567890.123456789" does not survive a float64).
//	boolean   INTEGER 0 or 1
//	timestamp TEXT, UTC RFC 3339 with nanoseconds as needed
//	          (time.RFC3339Nano, e.g. 2024-05-01T12:00:00.5Z)
//	json      TEXT, the compact JSON
//
// plus _idemsync_hash TEXT and _idemsync_synced_at TEXT (same format as
// timestamp). A schema other than "" or "main" is rejected: SQLite's
// schemas are attached files, which a target URL cannot name.
//
// Calls are serialized: one Prepare or Upsert runs at a time.
type SQLite struct {
	mu     sync.Mutex // serializes calls; guards stmts
	db     *sql.DB
	path   string
	logger *slog.Logger
	stmts  map[string]*sqliteStmts // by table and column set; see statements
}

var _ idsync.Sink = (*SQLite)(nil)

// sqliteStmts are the prepared statements of one table and column set.
type sqliteStmts struct {
	lookup, insert, insertMany, update *sql.Stmt
	batch                              int // rows per insertMany
}

// OpenSQLite opens (creating when missing) the SQLite database file at path,
// relative to the working directory unless absolute, and creates its parent
// directory with mode 0700 when missing. ":memory:" opens a private
// in-memory database. A nil logger discards logs. It fails with an
// *idsync.Error (ExitPermanent) when the file cannot be created or opened.
func OpenSQLite(ctx context.Context, path string, logger *slog.Logger) (*SQLite, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if path != ":memory:" {
		if dir := filepath.Dir(path); dir != "" {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, idsync.Errorf(idsync.ExitPermanent, "create directory for %s: %w", path, err)
			}
		}
	}
	// A file: URI so that any character in the path is taken literally; the
	// _pragma and _txlock parameters are read by the driver, the rest by
	// SQLite, which ignores parameters it does not know.
	dsn := "file:" + escapeSQLitePath(path) +
		fmt.Sprintf("?_pragma=busy_timeout(%d)", SQLiteBusyTimeout.Milliseconds()) +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, idsync.Errorf(idsync.ExitPermanent, "open sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &SQLite{db: db, path: path, logger: logger, stmts: map[string]*sqliteStmts{}}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, s.wrap("open sqlite "+path, err)
	}
	logger.Debug("opened sqlite target", "path", path)
	return s, nil
}

// escapeSQLitePath escapes the characters that end or escape the path part
// of an SQLite URI.
func escapeSQLitePath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}

// DB returns the underlying database handle, for tests and tools that read
// the table back. The sink still owns it: do not close it.
func (s *SQLite) DB() *sql.DB { return s.db }

// Close closes the prepared statements and the database, and returns the
// database's close error.
func (s *SQLite) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropStatements()
	return s.db.Close()
}

func (s *SQLite) dropStatements() {
	for k, st := range s.stmts {
		st.lookup.Close()
		st.insert.Close()
		st.insertMany.Close()
		st.update.Close()
		delete(s.stmts, k)
	}
}

// statements returns the prepared statements for t's current column set,
// preparing them on first use. They are reused across pages until the next
// Prepare (which may add columns) drops them.
func (s *SQLite) statements(ctx context.Context, t *idsync.Table) (*sqliteStmts, error) {
	var sig strings.Builder
	fmt.Fprintf(&sig, "%q %q %q", t.Name, t.Key, t.Version)
	for _, c := range t.Columns {
		fmt.Fprintf(&sig, " %q", c.Name)
	}
	if st, ok := s.stmts[sig.String()]; ok {
		return st, nil
	}
	table := quoteTable(&idsync.Table{Name: t.Name})
	var cols, marks, sets, where []string
	for _, c := range t.Columns {
		cols = append(cols, QuoteIdent(c.Name))
		marks = append(marks, "?")
		if !isKey(t, c.Name) {
			sets = append(sets, QuoteIdent(c.Name)+" = ?")
		}
	}
	for _, k := range t.Key {
		where = append(where, QuoteIdent(k)+" = ?")
	}
	sets = append(sets, QuoteIdent(idsync.ColHash)+" = ?", QuoteIdent(idsync.ColSyncedAt)+" = ?")
	lookupSQL := lookupQuery(t, lookupBatch)
	insertSQL := func(n int) string {
		tuple := "(" + strings.Join(marks, ", ") + ", ?, ?)"
		return fmt.Sprintf("INSERT INTO %s (%s, %s, %s) VALUES %s", table, strings.Join(cols, ", "),
			QuoteIdent(idsync.ColHash), QuoteIdent(idsync.ColSyncedAt), strings.TrimSuffix(strings.Repeat(tuple+", ", n), ", "))
	}
	updateSQL := fmt.Sprintf("UPDATE %s SET %s WHERE %s",
		table, strings.Join(sets, ", "), strings.Join(where, " AND "))
	// SQLite binds at most 32766 parameters a statement.
	st := &sqliteStmts{batch: max(1, min(insertBatch, 32000/(len(t.Columns)+2)))}
	var err error
	if st.lookup, err = s.db.PrepareContext(ctx, lookupSQL); err != nil {
		return nil, err
	}
	if st.insert, err = s.db.PrepareContext(ctx, insertSQL(1)); err != nil {
		st.lookup.Close()
		return nil, err
	}
	if st.insertMany, err = s.db.PrepareContext(ctx, insertSQL(st.batch)); err != nil {
		st.lookup.Close()
		st.insert.Close()
		return nil, err
	}
	if st.update, err = s.db.PrepareContext(ctx, updateSQL); err != nil {
		st.lookup.Close()
		st.insert.Close()
		st.insertMany.Close()
		return nil, err
	}
	s.stmts[sig.String()] = st
	return st, nil
}

func isKey(t *idsync.Table, name string) bool {
	for _, k := range t.Key {
		if k == name {
			return true
		}
	}
	return false
}

// Upsert writes rows in one transaction (see idsync.Sink): per row it looks
// up the stored hash (and version) by key, then inserts, updates or leaves
// the row alone. A row superseded by a later one with the same key, an
// identical row and a row older than the stored version count as Unchanged.
// On error nothing is committed; the error is an *idsync.Error
// (ExitTransient when the file is locked by another process past
// SQLiteBusyTimeout, ExitPermanent otherwise), or wraps ctx's error.
func (s *SQLite) Upsert(ctx context.Context, t *idsync.Table, rows []idsync.Row) (idsync.Counts, error) {
	var n idsync.Counts
	if len(rows) == 0 {
		return n, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "upsert into " + t.String()
	kept, dropped := idsync.Dedupe(t, rows)
	n.Unchanged = int64(dropped)
	st, err := s.statements(ctx, t)
	if err != nil {
		return idsync.Counts{}, s.wrap(op, err)
	}
	var version *idsync.Column
	verIdx := -1
	keyIdx := make([]int, 0, len(t.Key))
	for _, k := range t.Key {
		for i, c := range t.Columns {
			if c.Name == k {
				keyIdx = append(keyIdx, i)
			}
		}
	}
	for i := range t.Columns {
		if t.Columns[i].Name == t.Version {
			version, verIdx = &t.Columns[i], i
		}
	}

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return idsync.Counts{}, s.wrap(op, err)
	}
	defer tx.Rollback()
	update := tx.StmtContext(ctx, st.update)
	now := formatTime(time.Now())

	// Convert every row, then learn the stored hash and version of all the
	// page's keys in a few batched lookups rather than one query per row.
	all := make([][]any, len(kept))
	for ri, r := range kept {
		if len(r.Values) != len(t.Columns) {
			return idsync.Counts{}, idsync.Errorf(idsync.ExitPermanent, "%s: row has %d values for %d columns", op, len(r.Values), len(t.Columns))
		}
		vals := make([]any, len(t.Columns))
		for i := range t.Columns {
			if vals[i], err = sqliteValue(&t.Columns[i], r.Values[i]); err != nil {
				return idsync.Counts{}, fmt.Errorf("%s: %w", op, err)
			}
		}
		all[ri] = vals
	}
	stored, err := s.lookupAll(ctx, tx, st, t, keyIdx, all)
	if err != nil {
		return idsync.Counts{}, s.wrap(op, err)
	}
	// New rows are inserted st.batch at a time by one statement.
	var pending []any
	perRow := len(t.Columns) + 2
	flush := func(all bool) error {
		for len(pending) >= st.batch*perRow {
			if _, err := tx.StmtContext(ctx, st.insertMany).ExecContext(ctx, pending[:st.batch*perRow]...); err != nil {
				return err
			}
			pending = pending[st.batch*perRow:]
		}
		for all && len(pending) > 0 {
			if _, err := tx.StmtContext(ctx, st.insert).ExecContext(ctx, pending[:perRow]...); err != nil {
				return err
			}
			pending = pending[perRow:]
		}
		return nil
	}
	keys := make([]any, len(keyIdx))
	args := make([]any, 0, len(t.Columns)+2+len(keyIdx))
	for ri, r := range kept {
		vals := all[ri]
		for i, j := range keyIdx {
			keys[i] = vals[j]
		}
		prev, found := stored[sqliteKey(keys)]
		if !found {
			pending = append(append(pending, vals...), r.Hash, now)
			if err := flush(false); err != nil {
				return idsync.Counts{}, s.wrap(op, err)
			}
			n.Inserted++
			continue
		}
		if prev.hash.Valid && prev.hash.String == r.Hash {
			n.Unchanged++
			continue
		}
		if version != nil {
			ok, err := versionNewer(version, r.Values[verIdx], prev.version)
			if err != nil {
				return idsync.Counts{}, idsync.Errorf(idsync.ExitPermanent, "%s: %w", op, err)
			}
			if !ok {
				n.Unchanged++
				continue
			}
		}
		args = args[:0]
		for i, c := range t.Columns {
			if !isKey(t, c.Name) {
				args = append(args, vals[i])
			}
		}
		args = append(append(args, r.Hash, now), keys...)
		if _, err := update.ExecContext(ctx, args...); err != nil {
			return idsync.Counts{}, s.wrap(op, err)
		}
		n.Updated++
	}
	if err := flush(true); err != nil {
		return idsync.Counts{}, s.wrap(op, err)
	}
	if err := tx.Commit(); err != nil {
		return idsync.Counts{}, s.wrap(op, err)
	}
	return n, nil
}

// storedRow is what the table holds for a key.
type storedRow struct {
	hash    sql.NullString
	version any
}

// insertBatch is how many new rows one INSERT statement writes, at most.
const insertBatch = 50

// lookupBatch is how many keys one lookup query asks for.
const lookupBatch = 400

// lookupQuery selects the key, hash and version of n keys.
func lookupQuery(t *idsync.Table, n int) string {
	keyCols := quoteList(t.Key)
	version := "NULL"
	if t.Version != "" {
		version = QuoteIdent(t.Version)
	}
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(t.Key)), ", ") + ")"
	return fmt.Sprintf("SELECT %s, %s, %s FROM %s WHERE (%s) IN (VALUES %s)",
		keyCols, QuoteIdent(idsync.ColHash), version, QuoteIdent(t.Name),
		keyCols, strings.TrimSuffix(strings.Repeat(tuple+", ", n), ", "))
}

// lookupAll returns the stored hash and version of every key among rows
// (rows hold SQLite values; keyIdx says which are the key), keyed by
// sqliteKey. It asks in batches of lookupBatch keys, with the prepared
// statement for full batches.
func (s *SQLite) lookupAll(ctx context.Context, tx *sql.Tx, st *sqliteStmts, t *idsync.Table, keyIdx []int, rows [][]any) (map[string]storedRow, error) {
	out := make(map[string]storedRow, len(rows))
	key := make([]any, len(keyIdx))
	dest := make([]any, len(keyIdx)+2)
	for i := range key {
		dest[i] = &key[i]
	}
	args := make([]any, 0, lookupBatch*len(keyIdx))
	for start := 0; start < len(rows); start += lookupBatch {
		batch := rows[start:min(start+lookupBatch, len(rows))]
		args = args[:0]
		for _, vals := range batch {
			for _, j := range keyIdx {
				args = append(args, vals[j])
			}
		}
		var res *sql.Rows
		var err error
		if len(batch) == lookupBatch {
			res, err = tx.StmtContext(ctx, st.lookup).QueryContext(ctx, args...)
		} else {
			res, err = tx.QueryContext(ctx, lookupQuery(t, len(batch)), args...)
		}
		if err != nil {
			return nil, err
		}
		for res.Next() {
			var sr storedRow
			dest[len(keyIdx)], dest[len(keyIdx)+1] = &sr.hash, &sr.version
			if err := res.Scan(dest...); err != nil {
				res.Close()
				return nil, err
			}
			out[sqliteKey(key)] = sr
		}
		if err := res.Close(); err != nil {
			return nil, err
		}
		if err := res.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sqliteKey identifies a key by its SQLite values, as bound or as read back.
func sqliteKey(vals []any) string {
	var b strings.Builder
	for _, v := range vals {
		if bs, ok := v.([]byte); ok {
			v = string(bs)
		}
		fmt.Fprintf(&b, "%T:%v\x00", v, v)
	}
	return b.String()
}

// sqliteValue converts an engine value to what the SQLite column stores.
func sqliteValue(c *idsync.Column, v any) (any, error) {
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
			if _, ok := parseDecimal(s); ok {
				return s, nil
			}
		}
	case idsync.TypeBoolean:
		if b, ok := v.(bool); ok {
			if b {
				return int64(1), nil
			}
			return int64(0), nil
		}
	case idsync.TypeTimestamp:
		if tm, ok := v.(time.Time); ok {
			return formatTime(tm), nil
		}
	case idsync.TypeJSON:
		if s, ok := asJSON(v); ok {
			return s, nil
		}
	}
	return nil, valueError(c, v)
}

// wrap translates an SQLite error into an *idsync.Error: busy or locked is
// transient (another process holds the file past the busy timeout),
// anything else permanent. Context errors are returned wrapped as they are,
// so the engine can tell an interruption from a failure.
func (s *SQLite) wrap(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	code := idsync.ExitPermanent
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			code = idsync.ExitTransient
		}
	}
	return &idsync.Error{Code: code, Msg: op + " (sqlite " + s.path + ")", Err: err}
}
