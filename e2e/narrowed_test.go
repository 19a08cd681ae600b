package e2e

import (
	"strings"
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
