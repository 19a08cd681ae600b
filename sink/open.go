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
// (its Sink, Schemes, OpenTarget, OpenRead and a types.go with its table of
// column types), a test that passes it to sinktest.Run, and one line in
// drivers below. The job loader (package jobfile) checks and resolves
// target URLs through this table (ResolveURL), and the JSON Schema names
// its schemes (URLPattern), so neither changes for a new database.
package sink

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/postgres"
	"github.com/idemsync/idemsync/sink/sqlite"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// opener is a leaf's OpenTarget or OpenRead, returning its own *Sink.
type opener[S any] func(context.Context, contract.Conn, *slog.Logger) (S, error)

// Driver is one database a target URL can name.
type Driver struct {
	// Schemes are the URL schemes (before the first colon, lower case)
	// that name this database.
	Schemes []string
	// Example is a target URL of this database, shown in the hint for an
	// unknown scheme.
	Example string
	// Resolve checks a target URL of this database as the job file gives
	// it and returns the URL to use, a relative path resolved against dir
	// (the job file's folder).
	Resolve func(raw, dir string) (string, error)
	// File is true for a database that is a file idemsync creates, to
	// which target.mode applies.
	File bool
	// OpenTarget opens a job's target for writing, creating what the
	// database needs first (an SQLite file with target.mode).
	OpenTarget func(ctx context.Context, c contract.Conn, logger *slog.Logger) (contract.Sink, error)
	// OpenRead opens a job's target to read its table back and never
	// creates anything.
	OpenRead func(ctx context.Context, c contract.Conn, logger *slog.Logger) (contract.Sink, error)
}

// newDriver builds a Driver from a leaf's exported Schemes, OpenTarget and
// OpenRead, turning a failed open's typed nil into a plain nil.
func newDriver[S contract.Sink](schemes []string, example string, file bool, resolve func(raw, dir string) (string, error), write, read opener[S]) Driver {
	return Driver{
		Schemes: schemes,
		Example: example,
		File:    file,
		Resolve: resolve,
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

// drivers is the one table of databases. A new database is a leaf package
// with Schemes, OpenTarget and OpenRead, and one line here (see the package
// comment). The table is explicit rather than filled by each leaf's init:
// the list is read in one place, a leaf never imports this package, and no
// blank import is needed to make a database known.
var drivers = []Driver{
	newDriver(sqlite.Schemes, "sqlite:PATH", true, sqlite.Resolve, sqlite.OpenTarget, sqlite.OpenRead),
	newDriver(postgres.Schemes, "postgres://user:password@host:5432/database", false, postgres.Resolve, postgres.OpenTarget, postgres.OpenRead),
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
		Hint:  "use " + examples(),
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

// examples names a target URL of each database: "sqlite:PATH or postgres://…".
func examples() string {
	out := make([]string, len(drivers))
	for i, d := range drivers {
		out[i] = d.Example
	}
	return strings.Join(out, " or ")
}

// ResolveURL checks a job file's target URL and returns the URL to use
// (a relative SQLite path resolved against dir, the job file's folder),
// and whether its database is a file idemsync creates (target.mode
// applies). It fails, with a message for target.url, when no database has
// the URL's scheme or its database refuses the URL.
func ResolveURL(raw, dir string) (resolved string, file bool, err error) {
	d, ok := lookup(raw)
	if !ok {
		return "", false, fmt.Errorf("must be %s", examples())
	}
	resolved, err = d.Resolve(raw, dir)
	return resolved, d.File, err
}

// URLPattern is a regular expression that a target URL of some database
// matches: its scheme, for editors (the JSON Schema of the job file).
func URLPattern() string {
	var alts []string
	for _, d := range drivers {
		for _, s := range d.Schemes {
			alts = append(alts, regexp.QuoteMeta(s)+":")
		}
	}
	return "^(" + strings.Join(alts, "|") + ")"
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
