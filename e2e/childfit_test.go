package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A child table's column narrowed by hand (numeric(12,1) for amounts with
// two decimals) fails a plain run that writes a value it cannot hold, as
// the parent table's does: exit 1 naming the child table, the column and
// its type. Before, the run stored the rounded value and exited 0
// (docs/operations.md, "Verify").
func TestPostgresNarrowedChildColumn(t *testing.T) {
	pg := postgresURL(t)
	schema := freshSchema(t, pg)
	var body atomic.Value
	body.Store(`[{"id":1,"lines":[{"id":10,"amount":"1.5"}]}]`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body.Load().(string)))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", `name: kids
source:
  url: `+srv.URL+`
pagination:
  style: none
target:
  url: `+pg+`
  table: `+schema+`.orders
  key: [id]
  columns:
    id: {path: id, type: integer}
  children:
    lines:
      path: lines
      table: lines
      key: id
      columns:
        id: {path: id, type: integer}
        amount: {path: amount, type: numeric}
`)
	runCode(t, dir, nil, 0, "run", job)
	lines := pgx.Identifier{schema, "lines"}.Sanitize()
	pgExec(t, pg, `ALTER TABLE `+lines+` ALTER COLUMN amount TYPE numeric(12,1)`)
	body.Store(`[{"id":1,"lines":[{"id":10,"amount":"123.45"}]}]`)
	r := idemsync(t, dir, nil, "run", job, "--json")
	got := parseRun(t, r)
	if r.code != 1 || !strings.Contains(got.Error, "lines") || !strings.Contains(got.Error, `column "amount"`) || !strings.Contains(got.Error, "numeric(12,1)") {
		t.Fatalf("a child value its narrowed column cannot hold: exit %d, error %q, want 1 naming the child table, column and type\nstderr: %s", r.code, got.Error, r.stderr)
	}
}

// A SQLite child table whose column is declared by hand with a numeric
// affinity (INTEGER for zip codes mapped as text) fails a run that writes
// a value it changes ("00501" stored as 501), as the parent table's does:
// exit 1 naming the child table, the column and its declared type. Before,
// the run stored 501 and exited 0 (docs/operations.md, "Verify").
func TestSQLiteNumericAffinityChildColumn(t *testing.T) {
	var body atomic.Value
	body.Store(`[{"id":1,"lines":[{"id":10,"zip":"7"}]}]`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body.Load().(string)))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", `name: kids
source:
  url: `+srv.URL+`
pagination:
  style: none
target:
  url: sqlite:out.db
  table: orders
  key: [id]
  columns:
    id: {path: id, type: integer}
  children:
    lines:
      path: lines
      table: lines
      key: id
      columns:
        id: {path: id, type: integer}
        zip: zip
`)
	runCode(t, dir, nil, 0, "run", job)
	db := openSQLite(t, filepath.Join(dir, "out.db"))
	var ddl string
	if err := db.QueryRow(`SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'lines'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	hand := strings.Replace(ddl, `"zip" TEXT`, `"zip" INTEGER`, 1)
	if hand == ddl {
		t.Fatalf("no zip TEXT column in %s", ddl)
	}
	execAll(t, db, `DROP TABLE lines`, hand)
	body.Store(`[{"id":1,"lines":[{"id":10,"zip":"00501"}]}]`)
	r := idemsync(t, dir, nil, "run", job, "--json")
	got := parseRun(t, r)
	if r.code != 1 || !strings.Contains(got.Error, "lines") || !strings.Contains(got.Error, `column "zip"`) || !strings.Contains(got.Error, "INTEGER") {
		t.Fatalf("a child value its INTEGER column changes: exit %d, error %q, want 1 naming the child table, column and type\nstderr: %s", r.code, got.Error, r.stderr)
	}
}
