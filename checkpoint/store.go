// Package checkpoint keeps idemsync's durable state in a SQLite file: per
// job the saved high-water mark and inferred columns, a row per run and per
// committed page, the dead letters, and the per-job run lock beside the
// file. It implements contract.Store, and passes checkpoint/storetest.
//
// The file is opened in WAL mode with synchronous=FULL and one connection;
// everything a page records is one transaction, so a crash leaves either
// the whole page checkpoint or none of it.
package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/openfiles"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

var _ contract.Store = (*Store)(nil)

// Store is an idemsync state file. It is safe for concurrent use; calls are
// serialised on its single connection.
type Store struct {
	path string     // as given to Open, for messages
	abs  string     // absolute path, for the database and lock files
	file *stateFile // this process's own descriptors of the file (fd.go)
	db   *sql.DB
	log  *slog.Logger
	now  func() time.Time

	// beforeCommit, when set (tests only), runs just before a transaction
	// commits.
	beforeCommit func()

	// token identifies this Store as the owner of the runs it starts or
	// reopens (runs.owner).
	token string

	mu    sync.Mutex
	locks map[*held]struct{} // locks taken and not yet released

	closeFile sync.Once // gives file back once, however often Close is called

	page pageStmts // the statements of a page's commit (stmts.go)
}

// Open opens the state file at path, creating it (mode 0600, in a folder
// created with mode 0700) when missing, and migrates its schema. A nil
// logger discards logs.
//
// It returns a *contract.Error (Permanent) naming the path when
// the file cannot be created or opened, when it is not a SQLite database or
// is another application's database (such files are never modified), or
// when it was written by a newer idemsync.
func Open(ctx context.Context, path string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if path == "" {
		return nil, &contract.Error{Class: contract.Invalid, Msg: "state file path is empty"}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fileError(path, "open", err)
	}
	file, created, err := openStateFile(abs)
	if err != nil {
		return nil, fileError(path, "open", err)
	}
	db, err := sql.Open(driverName, dsn(abs))
	if err != nil {
		closeStateFile(file) //nolint:errcheck // the open error says more
		return nil, fileError(path, "open", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &Store{
		path:  path,
		abs:   abs,
		file:  file,
		db:    db,
		log:   logger,
		now:   time.Now,
		token: newToken(),
		locks: make(map[*held]struct{}),
	}
	if err := s.init(ctx); err != nil {
		db.Close()
		closeStateFile(file) //nolint:errcheck // the open error says more
		return nil, fileError(path, "open", err)
	}
	if !created {
		s.warnMode()
	}
	logger.Debug("state file opened", "path", path, "created", created)
	return s, nil
}

// init checks that the file is ours and not from a newer idemsync before
// anything writes to it, then turns on WAL and migrates. A current file —
// every open but the first after an upgrade — costs two statements: the
// probe and the applied migrations' numbers.
func (s *Store) init(ctx context.Context) error {
	p, err := readProbe(ctx, s.db)
	if err != nil {
		return err
	}
	if err := p.checkOwner(); err != nil {
		return err
	}
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	applied, err := readApplied(ctx, s.db, p.version, p.recorded, ms)
	if err != nil {
		return err
	}
	if err := notNewer(p.version, applied, ms); err != nil {
		return err
	}
	if !p.wal() {
		if err := setWAL(ctx, s.db); err != nil {
			return err
		}
	}
	if p.version == latestVersion(ms) && len(pending(applied, ms)) == 0 && (p.recorded || p.version == 0) {
		return nil
	}
	return s.migrateTo(ctx, ms)
}

// Path returns the state file's path as given to Open.
func (s *Store) Path() string { return s.path }

// Check runs PRAGMA quick_check. It returns an *contract.Error (code
// class Permanent) naming the file and the first problems found when the
// file is damaged, or when the check cannot run.
func (s *Store) Check(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return s.wrap("integrity check", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var msg string
		if err := rows.Scan(&msg); err != nil {
			return s.wrap("integrity check", err)
		}
		// The first message starts with "*** in database main ***\n".
		for _, line := range strings.Split(msg, "\n") {
			line = strings.TrimSpace(line)
			if line != "ok" && line != "" && !strings.HasPrefix(line, "***") && len(problems) < 5 {
				problems = append(problems, line)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return s.wrap("integrity check", err)
	}
	if len(problems) > 0 {
		return &contract.Error{
			Class: contract.Permanent,
			Msg:   fmt.Sprintf("state file %s is damaged: %s", s.path, strings.Join(problems, "; ")),
			Hint:  hintCorrupt,
		}
	}
	return nil
}

// Close releases the locks still held through this Store and closes the
// file. It returns the database's close error, if any.
func (s *Store) Close() error {
	s.mu.Lock()
	locks := s.locks
	s.locks = map[*held]struct{}{}
	s.mu.Unlock()
	for h := range locks {
		s.clearHolder(h.job)
		if err := h.release(); err != nil {
			s.log.Warn("release job lock", "job", h.job, "err", err)
		}
	}
	s.page.close()
	err := s.db.Close()
	s.closeFile.Do(func() {
		// After the database: only then does SQLite hold no lock on it.
		if cerr := closeStateFile(s.file); err == nil {
			err = cerr
		}
	})
	if err != nil {
		return s.wrap("close", err)
	}
	return nil
}

// jobName is the set of valid state names: a job's name (docs/job-file.md, "Top
// level"), or a job's name and one of its resources' joined by a dot
// ("shop.orders"; "Several resources in one file"), which no job name can be.
// It keeps lock file names inside the state file's folder.
var jobName = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)?$`)

func checkJob(job string) error {
	if !jobName.MatchString(job) {
		return fmt.Errorf("invalid job name %q: use letters, digits, _ and - (and one dot between a job and its resource)", job)
	}
	return nil
}

// Timestamps are stored as fixed-width RFC 3339 UTC text, so they sort.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func (s *Store) stamp() string { return s.now().UTC().Format(timeLayout) }

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(v sql.NullString) (time.Time, error) {
	if !v.Valid || v.String == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad timestamp %q: %w", v.String, err)
	}
	return t.UTC(), nil
}

// User hints for the failures a user can fix.
const (
	hintReadOnly = "make the state file, its -wal and -shm files and its folder writable by this user, or choose another with --state"
	hintFull     = "free space on the state file's disk; the page in flight is fetched again on resume"
	hintCorrupt  = "restore the state file from a backup, or move it aside to start over (the target table is kept and upserts make a full re-sync safe)"
	hintBusy     = "another process kept the state file busy; try again"
	hintNotOurs  = "point --state (or the spec's state:) at an idemsync state file or a new path"
	hintNewer    = "upgrade idemsync to the version that wrote this state file"
)

// hint returns what the user can do about err, or "".
func hint(err error) string {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_CANTOPEN:
			return hintReadOnly
		case sqlite3.SQLITE_FULL:
			return hintFull
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return hintCorrupt
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return hintBusy
		}
		if se.Code() == sqlite3.SQLITE_IOERR_SHMSIZE {
			return hintFull
		}
	}
	switch {
	case errors.Is(err, errNotOurs):
		return hintNotOurs
	case errors.Is(err, errNewer):
		return hintNewer
	case errors.Is(err, fs.ErrPermission):
		return hintReadOnly
	}
	return ""
}

// fileError is the error callers see for a failed operation op on the
// state file at path: a *contract.Error naming the file, exit 3 when
// another process kept the file busy past the busy timeout (try again),
// exit 1 otherwise. A cancelled
// or expired context keeps the context's error visible (wrapped with the
// same context, not as a permanent failure), so the engine can tell an
// interruption from a broken file.
func fileError(path, op string, err error) error {
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf("state file %s: %s", path, op)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", msg, err)
	}
	code, h := contract.Permanent, hint(err)
	if h == hintBusy {
		code = contract.Transient
	}
	// SQLite says only "unable to open database file" both when the
	// permissions refuse the file and when the process is out of file
	// descriptors (docs/operations.md, "The state file").
	var ce *sqlite.Error
	if errors.As(err, &ce) && ce.Code()&0xff == sqlite3.SQLITE_CANTOPEN {
		if out, fh := openfiles.OutOfDescriptors(path); out {
			h = fh + ", or choose another state with --state"
		}
	}
	// SQLite reports a -shm file it cannot grow, which on a full disk is
	// where a command fails first, as a bare "disk I/O error (4874)": say
	// what ran out (docs/operations.md, "A full disk").
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_IOERR_SHMSIZE {
		msg += ": no space left on its disk (its -shm file cannot grow)"
	}
	return &contract.Error{Class: code, Msg: msg, Hint: h, Err: err}
}

func (s *Store) wrap(op string, err error) error { return fileError(s.path, op, err) }

// inTx runs fn in one read-write transaction and commits it; on any error
// nothing of fn is kept.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	if err := tx.Commit(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// database/sql rolls back a transaction whose context ends; Commit
			// may then only say sql.ErrTxDone. Report the cause.
			return fmt.Errorf("commit: %w", cerr)
		}
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
