// Package sqlite is the SQLite target of idemsync (embedded, the default;
// modernc.org/sqlite, no cgo): Sink implements contract.Sink, OpenTarget and
// OpenRead make it known to the opener in package sink, and types.go holds
// its one table of column types. It passes the suite of sink/sinktest.
package sqlite

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

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/openfiles"
	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// BusyTimeout is how long a write waits for another process's lock on
// the SQLite file before failing with a transient error.
const BusyTimeout = 10 * time.Second

// Sink is the embedded SQLite sink (modernc.org/sqlite, no cgo). It keeps
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
//	          In a key column: canonical decimal text ("1.00" is "1").
//	boolean   INTEGER 0 or 1
//	timestamp TEXT, UTC RFC 3339 with always nine fractional digits
//	          (2024-05-01T12:00:00.500000000Z), so text order is time order
//	json      TEXT, the compact JSON (no insignificant whitespace)
//
// plus _idemsync_hash TEXT and _idemsync_synced_at TEXT (same format as
// timestamp). A schema other than "" or "main" is rejected: SQLite's
// schemas are attached files, which a target URL cannot name.
//
// Calls are serialized: one Prepare or Upsert runs at a time.
type Sink struct {
	mu     sync.Mutex // serializes calls; guards stmts
	db     *sql.DB
	path   string
	logger *slog.Logger
	stmts  map[string]*sqliteStmts // by table and column set; see statements
	// progress: the progress marker table is known to exist (progress.go).
	progress bool
	// triggers: whether each table (by name, lower-cased) has a trigger
	// other than the feed's, at a schema version (lookup.go, userTriggers).
	triggers map[string]userTrigs
}

var _ contract.Sink = (*Sink)(nil)

// Open opens (creating when missing) the SQLite database file at path,
// relative to the working directory unless absolute, and creates its parent
// directory with mode 0700 when missing. ":memory:" opens a private
// in-memory database. A nil logger discards logs. It fails with an
// *contract.Error (Permanent) when the file cannot be created or opened.
func Open(ctx context.Context, path string, logger *slog.Logger) (*Sink, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if path != ":memory:" {
		if dir := filepath.Dir(path); dir != "" {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, contract.Errorf(contract.Permanent, "create directory for %s: %w", path, err)
			}
		}
	}
	// A file: URI so that any character in the path is taken literally; the
	// _pragma and _txlock parameters are read by the driver, the rest by
	// SQLite, which ignores parameters it does not know.
	dsn := "file:" + escapeSQLitePath(path) +
		fmt.Sprintf("?_pragma=busy_timeout(%d)", BusyTimeout.Milliseconds()) +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, contract.Errorf(contract.Permanent, "open sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &Sink{db: db, path: path, logger: logger, stmts: map[string]*sqliteStmts{}}
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
func (s *Sink) DB() *sql.DB { return s.db }

// Close closes the prepared statements and the database, and returns the
// database's close error.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropStatements()
	return s.db.Close()
}

// wrap translates an SQLite error into a *contract.Error: busy or locked is
// transient (another process holds the file past the busy timeout),
// anything else permanent. Context errors are returned wrapped as they are,
// so the engine can tell an interruption from a failure.
func (s *Sink) wrap(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	code, msg, hint := contract.Permanent, op+" (sqlite "+s.path+")", ""
	var se *sqlitedrv.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			code = contract.Transient
		case sqlite3.SQLITE_FULL:
			hint = diskFullHint
		case sqlite3.SQLITE_CANTOPEN:
			// SQLite says only "unable to open database file" when the
			// process is out of file descriptors too (docs/operations.md,
			// "The target file").
			if out, fh := openfiles.OutOfDescriptors(s.path); out {
				hint = fh
			}
		}
		// SQLite reports a -shm file it cannot grow, which on a full disk
		// is where a run fails first, as a bare "disk I/O error (4874)":
		// say what ran out (docs/operations.md, "A full disk").
		if se.Code() == sqlite3.SQLITE_IOERR_SHMSIZE {
			msg += ": no space left on its disk (its -shm file cannot grow)"
			hint = diskFullHint
		}
	}
	return &contract.Error{Class: code, Msg: msg, Hint: hint, Err: err}
}

// diskFullHint is the hint of a target whose disk is full.
const diskFullHint = "free space on the target's disk; the checkpoint is intact and the next run continues"
