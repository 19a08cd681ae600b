package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// An AFTER row trigger that deletes the row just written (an "archive
// and remove" trigger) keeps it out of the table as a BEFORE trigger
// returning NULL does, but the statement still reports it written. Those
// rows are counted skipped, not inserted or unchanged, with the warning
// naming how many, on every run (docs/fault-tolerance.md, "A trigger that
// keeps rows out"). Before, the run counted them inserted, exited 0 with
// no warning and the table short of the source, and the next run inserted
// them again.
func TestPostgresAfterTriggerDeletesRows(t *testing.T) {
	pg := postgresURL(t)
	schema := freshSchema(t, pg)
	table := pgx.Identifier{schema, "orders"}
	api, dir, job := afterTriggerDeletesTens(t, func(url string) string { return pgJob("page", url, pg, schema) }, func(string) {
		fn := pgx.Identifier{schema, "drop_tens"}.Sanitize()
		pgExec(t, pg, "TRUNCATE "+table.Sanitize(),
			`CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.id % 10 = 0 THEN DELETE FROM `+table.Sanitize()+` WHERE id = NEW.id; END IF; RETURN NULL; END $$`,
			`CREATE TRIGGER drop_tens AFTER INSERT OR UPDATE ON `+table.Sanitize()+` FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	})
	// An update the trigger removes is skipped too, not updated.
	api.Update(7, func(r *fakeapi.Record) { r.Total++ })
	api.Update(20, func(r *fakeapi.Record) { r.Total++ })
	third := runCode(t, dir, nil, 0, "run", job)
	if third.Updated != 1 || third.Skipped != 10 || third.Unchanged != 89 {
		t.Errorf("third run: %+v, want 1 updated, 89 unchanged, 10 skipped", third)
	}
	if n := len(readPostgres(t, pg, table)); n != 90 || len(sourceRows(api)) != 100 {
		t.Errorf("table holds %d rows, want the 90 the trigger let stay", n)
	}
}

// The same on SQLite: an AFTER INSERT trigger deleting its row.
func TestSQLiteAfterTriggerDeletesRows(t *testing.T) {
	_, dir, _ := afterTriggerDeletesTens(t, func(url string) string { return styleJob("page", url, "sqlite:out.db") }, func(dir string) {
		db := openSQLite(t, filepath.Join(dir, "out.db"))
		execAll(t, db, `DELETE FROM orders`,
			`CREATE TRIGGER drop_tens AFTER INSERT ON orders WHEN NEW.id % 10 = 0 BEGIN DELETE FROM orders WHERE id = NEW.id; END`)
	})
	if n := len(readSQLite(t, filepath.Join(dir, "out.db"))); n != 90 {
		t.Errorf("table holds %d rows, want the 90 the trigger let stay", n)
	}
}

// afterTriggerDeletesTens runs the job (body: its text for the API's URL)
// over one page, has trigger empty the table and add an AFTER trigger
// deleting the rows whose id is a multiple of 10, and checks a run from
// the start and the one after it: 90 rows written, 10 skipped with the
// warning.
func afterTriggerDeletesTens(t *testing.T, body func(url string) string, trigger func(dir string)) (api *fakeapi.API, dir, job string) {
	t.Helper()
	api, url := startAPI(t, fakeapi.Options{Records: 100, Seed: 5})
	dir = t.TempDir()
	job = writeJob(t, dir, "job.yaml", body(url))
	runCode(t, dir, nil, 0, "run", job, "--max-pages", "1")
	trigger(dir)
	r := idemsync(t, dir, nil, "run", job, "--restart", "--json")
	got := parseRun(t, r)
	if r.code != 0 || got.Inserted != 90 || got.Skipped != 10 || got.Unchanged != 0 {
		t.Fatalf("AFTER trigger deleting 10 of 100 rows: exit %d %+v, want 90 inserted, 10 skipped", r.code, got)
	}
	if !strings.Contains(r.stderr, "kept rows of the page out of the table") {
		t.Errorf("no warning naming the removed rows:\n%s", r.stderr)
	}
	again := runCode(t, dir, nil, 0, "run", job)
	if again.Inserted != 0 || again.Unchanged != 90 || again.Skipped != 10 {
		t.Errorf("second run: %+v, want 90 unchanged, 10 skipped", again)
	}
	return api, dir, job
}
