// Package sink opens the database a job writes to. Each database is a leaf
// package that implements contract.Sink: sink/sqlite (embedded, the default)
// and sink/postgres. This package holds only the table of databases
// (drivers below), which maps a target URL's scheme to its leaf, so that
// cmd/ names no database. The leaves share sink/sqlkit (quoting, value
// conversion, key canonicalisation, URL redaction) and pass one
// conformance suite, sink/sinktest:
//
//   - a page is written in one transaction; on error nothing of it is
//     committed;
//   - new key: insert; different content hash: update; same hash: no write
//     (the synced-at column keeps its value); among rows sharing a key in
//     one page the last wins and the others count as unchanged;
//   - with Table.Version set, a stored row is overwritten only by a row whose
//     version is >= the stored one; a stored NULL version is always
//     overwritten, a NULL incoming version never overwrites a stored one;
//   - every identifier is quoted (sqlkit.QuoteIdent);
//   - errors are *contract.Error with a class of failure, and never contain a
//     password.
//
// Which stored row a key names is decided by the database in both: SQLite
// key values are first brought to the form their column stores (an integral
// value in an INTEGER column is an integer; a numeric key is canonical
// decimal text), so "1.0" and "1" are one key in both backends, as are "1"
// and 1 in an INTEGER PRIMARY KEY column. Rows a trigger drops count as
// Dropped.
//
// The backends differ where their databases do: SQLite has no schemas (a
// schema other than "main" is rejected), stores non-key numerics as exact
// text and keeps timestamps to the nanosecond (PostgreSQL to the
// microsecond).
//
// A new database is a leaf package beside sink/sqlite and sink/postgres
// (its Sink, OpenTarget, OpenRead and a types.go with its table of column
// types), a test that passes it to sinktest.Run, its entry in the table of
// package sink/targets (schemes, example, the URL check), and one line in
// drivers below. The job loader (package jobfile) checks and resolves
// target URLs through sink/targets (ResolveURL), which links no database
// driver, and the JSON Schema names its schemes (URLPattern), so neither
// changes for a new database.
package sink

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/postgres"
	"github.com/idemsync/idemsync/sink/sqlite"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/idemsync/idemsync/sink/targets"
)

// opener is a leaf's OpenTarget or OpenRead, returning its own *Sink.
type opener[S any] func(context.Context, contract.Conn, *slog.Logger) (S, error)

// Driver is one database a target URL can name: what the loader knows of
// it (package targets) and how to open it.
type Driver struct {
	targets.Database
	// OpenTarget opens a job's target for writing, creating what the
	// database needs first (an SQLite file with target.mode).
	OpenTarget func(ctx context.Context, c contract.Conn, logger *slog.Logger) (contract.Sink, error)
	// OpenRead opens a job's target to read its table back and never
	// creates anything.
	OpenRead func(ctx context.Context, c contract.Conn, logger *slog.Logger) (contract.Sink, error)
}

// newDriver builds a Driver from a database's entry in package targets
// and its leaf's OpenTarget and OpenRead, turning a failed open's typed nil
// into a plain nil.
func newDriver[S contract.Sink](db targets.Database, write, read opener[S]) Driver {
	return Driver{
		Database: db,
		OpenTarget: func(ctx context.Context, t contract.Conn, l *slog.Logger) (contract.Sink, error) {
			s, err := write(ctx, t, l)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		OpenRead: func(ctx context.Context, t contract.Conn, l *slog.Logger) (contract.Sink, error) {
			s, err := read(ctx, t, l)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
	}
}

// drivers is the one table of openers: each database of targets.All with
// its leaf. A new database is a leaf package with OpenTarget and OpenRead,
// its entry in targets.All, and one line here (see the package comment). The table is explicit rather than filled by each leaf's init:
// the list is read in one place, a leaf never imports this package, and no
// blank import is needed to make a database known.
var drivers = []Driver{
	newDriver(targets.SQLite, sqlite.OpenTarget, sqlite.OpenRead),
	newDriver(targets.Postgres, postgres.OpenTarget, postgres.OpenRead),
}

// Lookup returns the Driver for rawURL's scheme (compared
// case-insensitively), or a *contract.Error (Invalid) naming the URL,
// password redacted, when no database has that scheme.
func Lookup(rawURL string) (Driver, error) {
	if d, ok := lookup(rawURL); ok {
		return d, nil
	}
	return Driver{}, &contract.Error{
		Class: contract.Invalid,
		Msg:   "unsupported target url " + RedactURL(rawURL),
		Hint:  "use " + targets.Examples(),
	}
}

// lookup returns the Driver for rawURL's scheme, compared
// case-insensitively.
func lookup(rawURL string) (Driver, bool) {
	scheme, _, _ := strings.Cut(rawURL, ":")
	for _, d := range drivers {
		for _, s := range d.Schemes {
			if strings.EqualFold(s, scheme) {
				return d, true
			}
		}
	}
	return Driver{}, false
}

// Open connects to the target database named by rawURL and returns its
// Sink: OpenTarget for a target with no other option set.
//
// Accepted forms:
//   - sqlite:PATH, sqlite://PATH and sqlite:///abs/path: an SQLite file, PATH
//     absolute or relative to the working directory; its parent directory is
//     created (mode 0700) and the file (mode 0600) when missing.
//     sqlite::memory: opens a private in-memory database.
//   - postgres://… and postgresql://…: a PostgreSQL server, in any form pgx
//     accepts (connect_timeout defaults to 10s).
//
// A nil logger discards logs. Open fails with a *contract.Error: Invalid for
// an unknown scheme or a malformed URL, Transient when the server cannot
// be reached, Permanent when it refuses the connection (authentication,
// missing database). Error texts never contain the URL's password.
func Open(ctx context.Context, rawURL string, logger *slog.Logger) (contract.Sink, error) {
	return OpenTarget(ctx, contract.Conn{URL: rawURL}, logger)
}

// OpenTarget opens the sink for a job's target: its database's OpenTarget,
// with the target's options applied by the backend that reads them (SQLite:
// target.mode for a new file; PostgreSQL: every statement bounded by
// t.Timeout, nil: lock 30s, statement 5m). It fails as Open does.
func OpenTarget(ctx context.Context, c contract.Conn, logger *slog.Logger) (contract.Sink, error) {
	d, err := Lookup(c.URL)
	if err != nil {
		return nil, err
	}
	return d.OpenTarget(ctx, c, discardNil(logger))
}

// OpenRead opens a job's target to read its table back. Unlike OpenTarget
// it never creates anything: a SQLite file that does not exist yet is an
// *contract.Error (exit 1) saying that the job has not written anything. It
// otherwise fails as Open does.
func OpenRead(ctx context.Context, c contract.Conn, logger *slog.Logger) (contract.Sink, error) {
	d, err := Lookup(c.URL)
	if err != nil {
		return nil, err
	}
	return d.OpenRead(ctx, c, discardNil(logger))
}

// RedactURL returns s with any password replaced by xxxxx; see
// sqlkit.RedactURL. It never fails.
func RedactURL(s string) string { return sqlkit.RedactURL(s) }

// discardNil returns logger, or a logger that discards when it is nil.
func discardNil(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return logger
}

// SameFile reports whether the target at targetURL is the file at path
// (a SQLite target that is that file, by its path or, when both exist,
// by the file they reach: a hard or symbolic link).
func SameFile(targetURL, path string) bool {
	scheme, _, _ := strings.Cut(targetURL, ":")
	if !strings.EqualFold(scheme, "sqlite") || path == "" {
		return false
	}
	file, err := sqlite.Path(targetURL)
	if err != nil || file == ":memory:" || path == ":memory:" {
		return false
	}
	a, errA := os.Stat(file)
	b, errB := os.Stat(path)
	if errA == nil && errB == nil {
		return os.SameFile(a, b)
	}
	absA, errA := filepath.Abs(file)
	absB, errB := filepath.Abs(path)
	return errA == nil && errB == nil && absA == absB
}
