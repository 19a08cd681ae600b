// Package sink holds the backends that write pages of rows into the target
// table: SQLite (embedded, the default) and PostgreSQL. Both implement
// idsync.Sink with the same semantics, checked by one conformance suite
// (conformance_test.go) that runs against each:
//
//   - a page is written in one transaction; on error nothing of it is
//     committed;
//   - new key: insert; different content hash: update; same hash: no write
//     (the synced-at column keeps its value); among rows sharing a key in
//     one page the last wins and the others count as unchanged;
//   - with Table.Version set, a stored row is overwritten only by a row whose
//     version is >= the stored one; a stored NULL version is always
//     overwritten, a NULL incoming version never overwrites a stored one;
//   - every identifier is quoted (QuoteIdent);
//   - errors are *idsync.Error with an exit code, and never contain a
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
package sink

import (
	"context"
	"log/slog"
	"net/url"
	"regexp"
	"strings"

	idsync "github.com/idemsync/idemsync/sync"
)

// Open connects to the target database named by rawURL and returns its Sink.
//
// Accepted forms:
//   - sqlite:PATH, sqlite://PATH and sqlite:///abs/path: an SQLite file, PATH
//     absolute or relative to the working directory; its parent directory is
//     created (mode 0700) when missing. sqlite::memory: opens a private
//     in-memory database.
//   - postgres://… and postgresql://…: a PostgreSQL server, in any form pgx
//     accepts (connect_timeout defaults to 10s).
//
// A nil logger discards logs. Open fails with an *idsync.Error: ExitUsage for
// an unknown scheme or a malformed URL, ExitTransient when the server cannot
// be reached, ExitPermanent when it refuses the connection (authentication,
// missing database). Error texts never contain the URL's password.
func Open(ctx context.Context, rawURL string, logger *slog.Logger) (idsync.Sink, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	scheme, _, _ := strings.Cut(rawURL, ":")
	switch strings.ToLower(scheme) {
	case "sqlite":
		path, err := sqlitePath(rawURL)
		if err != nil {
			return nil, err
		}
		return OpenSQLite(ctx, path, logger)
	case "postgres", "postgresql":
		return OpenPostgres(ctx, rawURL, logger)
	}
	return nil, &idsync.Error{
		Code: idsync.ExitUsage,
		Msg:  "unsupported target url " + RedactURL(rawURL),
		Hint: "use sqlite:PATH or postgres://user:password@host:5432/database",
	}
}

// OpenTarget opens the sink for a job's target: Open on t.URL, with the
// target's options applied by the backend that reads them: PostgreSQL
// bounds every statement by t.Timeout (nil: lock 30s, statement 5m). It
// fails as Open does.
func OpenTarget(ctx context.Context, t *idsync.Target, logger *slog.Logger) (idsync.Sink, error) {
	if err := createSQLiteFile(t); err != nil { // target.mode: see sqlite_mode.go
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	scheme, _, _ := strings.Cut(t.URL, ":")
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return openPostgres(ctx, t.URL, logger, t.Timeout)
	}
	return Open(ctx, t.URL, logger)
}

// sqlitePath extracts the file path from a sqlite: URL.
func sqlitePath(rawURL string) (string, error) {
	path := rawURL[len("sqlite:"):]
	path = strings.TrimPrefix(path, "//") // sqlite://rel/path and sqlite:///abs/path
	if path == "" {
		return "", &idsync.Error{
			Code: idsync.ExitUsage,
			Msg:  "target url " + rawURL + " has no file path",
			Hint: "use sqlite:PATH, e.g. sqlite:out/orders.db",
		}
	}
	return path, nil
}

const redacted = "xxxxx"

var (
	// dsnPassword matches password=... in a key=value DSN or a URL query,
	// quoted ('it''s' or 'a\'b') or not.
	dsnPassword = regexp.MustCompile(`(?i)\b((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.|'')*'|[^\s&]*)`)
	// urlUserinfo matches scheme://user:password@ when url.Parse fails; it
	// swallows up to the last @ so a password containing @ is hidden too.
	urlUserinfo = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^:/?#@]*:).*@`)
)

// RedactURL returns s with any password replaced by xxxxx: the password of a
// URL's userinfo, password= and sslpassword= query parameters, and
// password=... in a key=value DSN ("host=db password=secret"). Everything
// else is kept so the result still says which server is meant. It never fails;
// a string it cannot parse is redacted by pattern, erring on hiding too much.
func RedactURL(s string) string {
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), redacted)
			}
			if u.RawQuery != "" {
				u.RawQuery = dsnPassword.ReplaceAllString(u.RawQuery, "${1}"+redacted)
			}
			return u.String()
		}
		s = urlUserinfo.ReplaceAllString(s, "${1}"+redacted+"@")
	}
	return dsnPassword.ReplaceAllString(s, "${1}"+redacted)
}

// safeError carries a message already cleaned of secrets while keeping the
// original error reachable for errors.Is/As (context.Canceled, driver types).
type safeError struct {
	msg string
	err error
}

func (e *safeError) Error() string { return e.msg }
func (e *safeError) Unwrap() error { return e.err }

// scrub removes every occurrence of secret (raw and URL-escaped) from s.
func scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	for _, v := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret)} {
		s = strings.ReplaceAll(s, v, redacted)
	}
	return s
}
