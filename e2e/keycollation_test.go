package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// collationJob serves "A" on page 1 and "a" on page 2: two records, their
// keys different only in case, and returns a job writing them to table.
func collationJob(t *testing.T, target, table string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body := `{"data":[]}`
		switch r.URL.Query().Get("page") {
		case "", "1":
			body = `{"data":[{"id":"A","v":"upper"}],"meta":{"has_more":true}}`
		case "2":
			body = `{"data":[{"id":"a","v":"lower"}],"meta":{"has_more":false}}`
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	return writeJob(t, dir, "job.yaml", `name: ci
source:
  url: `+srv.URL+`
  records: data
pagination:
  style: page
  size_param: per_page
  size: 1
  has_more: meta.has_more
target:
  url: `+target+`
  table: `+table+`
  key: [id]
  deletes: hard
  changes: true
  columns:
    id: id
    v: v
`)
}

// A key column the user declared COLLATE NOCASE takes the source's two
// records "A" and "a" for one row: the run is refused at its start naming
// the table, the column and the collation (docs/job-file.md, "target").
// Before, every run exited 0 with one row for two records, "A" holding
// the content of "a", and counted both updated (two feed events) each run.
func TestSQLiteKeyCollationRefused(t *testing.T) {
	for name, ddl := range map[string]string{
		"column": `CREATE TABLE t (id TEXT COLLATE NOCASE PRIMARY KEY, v TEXT)`,
		"index":  `CREATE TABLE t (id TEXT NOT NULL, v TEXT); CREATE UNIQUE INDEX t_id ON t (id COLLATE RTRIM)`,
	} {
		t.Run(name, func(t *testing.T) {
			job := collationJob(t, "sqlite:out.db", "t")
			dir := filepath.Dir(job)
			execAll(t, openSQLite(t, filepath.Join(dir, "out.db")), ddl)
			r := idemsync(t, dir, nil, "run", job, "--json")
			got := parseRun(t, r)
			if r.code != 1 || got.Inserted+got.Updated != 0 || !strings.Contains(got.Error, `key column "id"`) || !strings.Contains(got.Error, "COLLATE") {
				t.Fatalf("key column compared under a collation: exit %d %+v, want exit 1 before any write naming the column and its collation\nstderr: %s", r.code, got, r.stderr)
			}
		})
	}
}

// The same on PostgreSQL: a citext key column, one with a nondeterministic
// ICU collation, and a unique index under one.
func TestPostgresKeyCollationRefused(t *testing.T) {
	pg := postgresURL(t)
	pgExec(t, pg, `CREATE EXTENSION IF NOT EXISTS citext`)
	for name, ddl := range map[string]string{
		"citext":    `CREATE TABLE %s (id public.citext PRIMARY KEY, v text)`,
		"collation": `CREATE TABLE %s (id text COLLATE %c PRIMARY KEY, v text)`,
		"index":     `CREATE TABLE %s (id text NOT NULL, v text); CREATE UNIQUE INDEX ON %s (id COLLATE %c)`,
	} {
		t.Run(name, func(t *testing.T) {
			schema := freshSchema(t, pg)
			coll := pgx.Identifier{schema, "ci"}.Sanitize()
			table := pgx.Identifier{schema, "t"}.Sanitize()
			pgExec(t, pg, `CREATE COLLATION `+coll+` (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`,
				strings.NewReplacer("%s", table, "%c", coll).Replace(ddl))
			job := collationJob(t, pg, schema+".t")
			r := idemsync(t, filepath.Dir(job), nil, "run", job, "--json")
			got := parseRun(t, r)
			if r.code != 1 || got.Inserted+got.Updated != 0 || !strings.Contains(got.Error, `key column "id"`) {
				t.Fatalf("key column compared case-insensitively: exit %d %+v, want exit 1 before any write naming the column\nstderr: %s", r.code, got, r.stderr)
			}
		})
	}
}
