package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A PostgreSQL column narrowed by hand (numeric(12,1) for a numeric
// column whose values have two decimals) fails a plain run that writes a
// value the column cannot hold, as a verify run does: exit 1 naming the
// table, the column, its type and the record, nothing of the page written.
// Before, the run stored the rounded value, exited 0 and counted it
// unchanged from then on (docs/operations.md, "Verify").
func TestPostgresNarrowedColumnPlainRun(t *testing.T) {
	pg := postgresURL(t)
	api, url := startAPI(t, fakeapi.Options{Records: 60, Seed: 4})
	schema := freshSchema(t, pg)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", pgJob("page", url, pg, schema))
	table := pgx.Identifier{schema, "orders"}
	t.Run("table created by hand", func(t *testing.T) {
		pgExec(t, pg, `CREATE TABLE `+table.Sanitize()+` (id bigint PRIMARY KEY, name text, email text,
			total numeric(12,1), active boolean, updated_at timestamptz, tags jsonb)`)
		r := runCode(t, dir, nil, 1, "run", job)
		for _, want := range []string{"orders", `column "total"`, "numeric(12,1)", "record with key id="} {
			if !strings.Contains(r.Error, want) {
				t.Errorf("error %q does not name %s", r.Error, want)
			}
		}
		if n := len(readPostgres(t, pg, table)); n != 0 {
			t.Errorf("the failed page wrote %d rows", n)
		}
		pgExec(t, pg, `ALTER TABLE `+table.Sanitize()+` ALTER COLUMN total TYPE numeric`)
		runCode(t, dir, nil, 0, "run", job)
		assertEqualSource(t, readPostgres(t, pg, table), sourceRows(api))
	})
	t.Run("narrowed between runs", func(t *testing.T) {
		pgExec(t, pg, `ALTER TABLE `+table.Sanitize()+` ALTER COLUMN total TYPE numeric(12,1)`)
		api.Update(7, func(r *fakeapi.Record) { r.Total = 12345 }) // 123.45
		r := runCode(t, dir, nil, 1, "run", job)
		if !strings.Contains(r.Error, `column "total"`) || !strings.Contains(r.Error, "id=7") {
			t.Errorf("error %q does not name the column and the record", r.Error)
		}
		pgExec(t, pg, `ALTER TABLE `+table.Sanitize()+` ALTER COLUMN total TYPE numeric`)
		runCode(t, dir, nil, 0, "run", job)
		if got, want := readPostgres(t, pg, table)[7].total, sourceRows(api)[7].total; got != want {
			t.Errorf("row 7 total %s, want %s", got, want)
		}
	})
}

// A SQLite column declared by hand with a numeric affinity (INTEGER,
// REAL, NUMERIC) for a column mapped as text or numeric converts the text
// written into it: "00501" becomes 501, a numeric of 20 digits a REAL of
// 15. A run that writes a value the column changes so fails with exit 1
// naming the table, the column, its declared type and the record, nothing
// of the page written; values the conversion keeps ("7", "0.5" as a
// numeric) pass. Before, the run stored 501, exited 0, and a verify run
// compared 501 with "00501" after the same conversion and called them
// equal (docs/operations.md, "Verify").
func TestSQLiteNumericAffinityColumn(t *testing.T) {
	body, url := bodyServer(t, `[{"id":"a","zip":"7","amount":"0.5"},{"id":"b","zip":"00501","amount":"1.5"}]`)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", `name: zips
source:
  url: `+url+`
pagination:
  style: none
target:
  url: sqlite:out.db
  table: items
  key: [id]
  columns:
    id: id
    zip: zip
    amount: {path: amount, type: numeric}
`)
	path := filepath.Join(dir, "out.db")
	db := openSQLite(t, path)
	execAll(t, db, `CREATE TABLE items (id TEXT PRIMARY KEY, zip INTEGER, amount REAL)`)
	r := runCode(t, dir, nil, 1, "run", job)
	for _, want := range []string{"items", `column "zip"`, "INTEGER", "id=b", "00501", `"501"`} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("error %q does not name %s", r.Error, want)
		}
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM items`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the failed page wrote %d rows (%v)", n, err)
	}
	// A numeric too long for a REAL's 15 digits is refused too.
	body.Store(`[{"id":"a","zip":"7","amount":"0.5"},{"id":"b","zip":"x501","amount":"12345678901234567.25"}]`)
	r = runCode(t, dir, nil, 1, "run", job)
	if !strings.Contains(r.Error, `column "amount"`) || !strings.Contains(r.Error, "REAL") {
		t.Errorf("error %q does not name the column amount and its type", r.Error)
	}
	body.Store(`[{"id":"a","zip":"7","amount":"0.5"},{"id":"b","zip":"x501","amount":"1.25"}]`)
	if got := runCode(t, dir, nil, 0, "run", job); got.Inserted != 2 {
		t.Errorf("values the columns keep: %+v, want 2 inserted", got)
	}
}

// bodyServer serves first as JSON for the test's lifetime, and then what
// is stored in the body it returns, with the server's URL.
func bodyServer(t *testing.T, first string) (*atomic.Value, string) {
	t.Helper()
	body := new(atomic.Value)
	body.Store(first)
	return body, serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body.Load().(string)))
	}))
}
