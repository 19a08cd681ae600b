package checkpoint

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/idemsync/idemsync/internal/failpoint"
)

// sqliteHeader starts every SQLite 3 database file.
const sqliteHeader = "SQLite format 3\x00"

// errNotOurs marks a file that is not an idemsync state file; Open refuses
// it without writing a byte.
var errNotOurs = errors.New("not an idemsync state file")

// checkHeader accepts an empty file (SQLite treats it as a new database) or
// one starting with the SQLite header, and rejects anything else. It reads
// through f and leaves it open (fd.go). openStateFile looks at what the path
// is before opening it: opening a named pipe waits for a writer, and a
// device (/dev/null) reads as an empty file.
func checkHeader(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: it is %s, not a regular file", errNotOurs, fileKind(st.Mode()))
	}
	head := make([]byte, len(sqliteHeader))
	n, err := f.ReadAt(head, 0)
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		return nil
	case err != nil && err != io.EOF:
		return fmt.Errorf("read header: %w", err)
	case n < len(head) || !bytes.Equal(head, []byte(sqliteHeader)):
		return fmt.Errorf("%w: it is not a SQLite database", errNotOurs)
	}
	return nil
}

// fileKind names what a path that is not a regular file is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// checkOwner refuses a SQLite database that belongs to another application:
// one with another application_id, or with tables of its own and no
// application_id. It only reads, so a refused file is left as it was.
func (p probe) checkOwner() error {
	switch {
	case p.appID == ApplicationID:
		return nil
	case p.appID != 0:
		return fmt.Errorf("%w: it is another application's SQLite database (application_id %d)", errNotOurs, p.appID)
	case p.tables > 0:
		return fmt.Errorf("%w: it is another application's SQLite database (%d tables, no idemsync application_id)", errNotOurs, p.tables)
	}
	return nil
}

// setWAL switches the file to WAL once; the mode is persistent, so an
// existing state file (even a read-only one) is left alone.
func setWAL(ctx context.Context, db *sql.DB) error {
	// Two processes creating the same new file race for the switch: the
	// loser gets SQLITE_BUSY and finds WAL set by the winner on a re-read.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var mode string
		if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			return fmt.Errorf("read journal mode: %w", err)
		}
		if strings.EqualFold(mode, "wal") {
			return nil
		}
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		switch {
		case err == nil && strings.EqualFold(mode, "wal"):
			return nil
		case err == nil:
			return fmt.Errorf("set journal mode: got %q instead of wal", mode)
		case !strings.Contains(err.Error(), "SQLITE_BUSY") && !strings.Contains(err.Error(), "database is locked") || time.Now().After(deadline):
			return fmt.Errorf("set journal mode: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// busyTimeout is how long a statement waits for another process's write
// lock on the state file before failing with SQLITE_BUSY (exit 3): 10 s
// (a test build may shorten it, failpoint.LockWait).
var busyTimeout = failpoint.LockWait(10 * time.Second)

// dsn returns the modernc DSN of the state file at abs (an absolute path):
// a file: URI, with the characters URIs reserve escaped, and the settings
// every new connection applies: a busy timeout, synchronous=FULL, foreign
// keys, cell_size_check (a damaged page's cell offsets are an error, not
// followed: a damaged ledger index found no entry for a live key and a
// second claimer acquired it, docs/ledger.md "Exit codes"), and BEGIN
// IMMEDIATE for read-write transactions.
func dsn(abs string) string {
	p := filepath.ToSlash(abs)
	if runtime.GOOS == "windows" && !strings.HasPrefix(p, "/") {
		p = "/" + p // file:///C:/...
	}
	var b strings.Builder
	b.WriteString("file://")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%', '?', '#':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	fmt.Fprintf(&b, "?_pragma=busy_timeout(%d)&", busyTimeout.Milliseconds())
	b.WriteString("_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_pragma=cell_size_check(1)&_txlock=immediate")
	return b.String()
}

// warnMode logs when an existing state file is readable by other users; the
// file is left as the user made it.
func (s *Store) warnMode() {
	if runtime.GOOS == "windows" {
		return
	}
	st, err := os.Stat(s.path)
	if err == nil && st.Mode().Perm()&0o077 != 0 {
		s.log.Warn("state file is accessible to other users; idemsync creates it with mode 0600",
			"path", s.path, "mode", st.Mode().Perm().String())
	}
}
