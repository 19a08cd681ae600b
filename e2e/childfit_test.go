package e2e

import (
	"path/filepath"
	"strings"
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
	childColumnUnfit(t, childFit{
		target: pg, table: schema + ".orders",
		column: "amount", mapping: "{path: amount, type: numeric}",
		first: "1.5", then: "123.45", typ: "numeric(12,1)",
		narrow: func(t *testing.T, dir string) {
			lines := pgx.Identifier{schema, "lines"}.Sanitize()
			pgExec(t, pg, `ALTER TABLE `+lines+` ALTER COLUMN amount TYPE numeric(12,1)`)
		},
	})
}

// A SQLite child table whose column is declared by hand with a numeric
// affinity (INTEGER for zip codes mapped as text) fails a run that writes
// a value it changes ("00501" stored as 501), as the parent table's does:
// exit 1 naming the child table, the column and its declared type. Before,
// the run stored 501 and exited 0 (docs/operations.md, "Verify").
func TestSQLiteNumericAffinityChildColumn(t *testing.T) {
	childColumnUnfit(t, childFit{
		target: "sqlite:out.db", table: "orders",
		column: "zip", mapping: "zip",
		first: "7", then: "00501", typ: "INTEGER",
		narrow: func(t *testing.T, dir string) {
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
		},
	})
}

// childFit is a job whose orders have child lines with one more column
// than their key, and how a hand narrows that column.
type childFit struct {
	target, table   string // the job's target URL and parent table
	column, mapping string // the child column and its mapping in the job
	first, then     string // the column's value before and after narrow
	typ             string // the narrowed type the error names
	narrow          func(t *testing.T, dir string)
}

// childColumnUnfit runs c's job over c.first, narrows the column, serves
// c.then and wants the run to fail with exit 1 naming the child table, the
// column and its type.
func childColumnUnfit(t *testing.T, c childFit) {
	t.Helper()
	child := func(v string) string {
		return `[{"id":1,"lines":[{"id":10,"` + c.column + `":"` + v + `"}]}]`
	}
	body, url := bodyServer(t, child(c.first))
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", `name: kids
source:
  url: `+url+`
pagination:
  style: none
target:
  url: `+c.target+`
  table: `+c.table+`
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
        `+c.column+`: `+c.mapping+`
`)
	runCode(t, dir, nil, 0, "run", job)
	c.narrow(t, dir)
	body.Store(child(c.then))
	r := idemsync(t, dir, nil, "run", job, "--json")
	got := parseRun(t, r)
	if r.code != 1 || !strings.Contains(got.Error, "lines") || !strings.Contains(got.Error, `column "`+c.column+`"`) || !strings.Contains(got.Error, c.typ) {
		t.Fatalf("a child value its %s column cannot hold: exit %d, error %q, want 1 naming the child table, column and type\nstderr: %s", c.typ, r.code, got.Error, r.stderr)
	}
}
