// Package targets is the table of databases a job file's target.url can
// name, as far as loading a job file needs it: each database's URL schemes,
// an example URL, whether it is a file idemsync creates (target.mode
// applies), and the check that resolves a URL. It links no database driver,
// so the loader (package jobfile) and the JSON Schema read it without
// linking pgx or SQLite; the opener, package sink, pairs each entry with its
// leaf package's OpenTarget and OpenRead (docs/architecture.md).
package targets

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
)

// Database is what the loader knows of one database a target URL can name.
type Database struct {
	// Schemes are the URL schemes (before the first colon, lower case)
	// that name this database, compared case-insensitively.
	Schemes []string
	// Example is a target URL of this database, shown in the hint for an
	// unknown scheme.
	Example string
	// File is true for a database that is a file idemsync creates, to
	// which target.mode applies.
	File bool
	// Resolve checks a target URL of this database as the job file gives
	// it and returns the URL to use, a relative path resolved against dir
	// (the job file's folder). Its error is worded for target.url.
	Resolve func(raw, dir string) (string, error)
}

// SQLite is an SQLite file: sqlite:PATH, sqlite://PATH or
// sqlite:///abs/path.
var SQLite = Database{Schemes: []string{"sqlite"}, Example: "sqlite:PATH", File: true, Resolve: resolveSQLite}

// Postgres is a PostgreSQL server: postgres://… or postgresql://….
var Postgres = Database{Schemes: []string{"postgres", "postgresql"}, Example: "postgres://user:password@host:5432/database", Resolve: resolvePostgres}

// All is the one table of databases, in the order hints name them. A new
// database is an entry here and a line in package sink's drivers.
var All = []Database{SQLite, Postgres}

// Lookup returns the database of rawURL's scheme, compared
// case-insensitively.
func Lookup(rawURL string) (Database, bool) {
	scheme, _, _ := strings.Cut(rawURL, ":")
	for _, d := range All {
		for _, s := range d.Schemes {
			if strings.EqualFold(s, scheme) {
				return d, true
			}
		}
	}
	return Database{}, false
}

// Examples names a target URL of each database: "sqlite:PATH or postgres://…".
func Examples() string {
	out := make([]string, len(All))
	for i, d := range All {
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
	d, ok := Lookup(raw)
	if !ok {
		return "", false, fmt.Errorf("must be %s", Examples())
	}
	resolved, err = d.Resolve(raw, dir)
	return resolved, d.File, err
}

// URLPattern is a regular expression that a target URL of some database
// matches: its scheme, for editors (the JSON Schema of the job file).
func URLPattern() string {
	var alts []string
	for _, d := range All {
		for _, s := range d.Schemes {
			alts = append(alts, regexp.QuoteMeta(s)+":")
		}
	}
	return "^(" + strings.Join(alts, "|") + ")"
}

// resolveSQLite returns a sqlite: URL with a relative file path made
// absolute against dir (the job file's folder): sqlite:out.db in /jobs is
// sqlite:/jobs/out.db. It fails when the URL names no file.
func resolveSQLite(raw, dir string) (string, error) {
	_, p, _ := strings.Cut(raw, ":")
	p = strings.TrimPrefix(p, "//")
	if p == "" {
		return "", fmt.Errorf("sqlite: needs a file path, e.g. sqlite:out/orders.db")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return "sqlite:" + abs, nil
}

// resolvePostgres checks that a postgres URL parses and names a host. The
// URL is returned unchanged (dir is not used: a server has no relative
// paths).
func resolvePostgres(raw, _ string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("not a valid postgres URL")
	}
	if u.Host == "" {
		return "", fmt.Errorf("postgres URL needs a host")
	}
	return raw, nil
}
