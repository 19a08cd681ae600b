package e2e

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Rows a trigger on the target table drops (RAISE(IGNORE)) are reported as
// skipped, not as inserted or unchanged, in the run's counts and status;
// a second run reports them again.
func TestTriggerDroppedRowsAreSkipped(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 30})
	dir := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(dir, "out.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE orders (id INTEGER PRIMARY KEY)`,
		`CREATE TRIGGER drop_tens BEFORE INSERT ON orders WHEN NEW.id % 10 = 0 BEGIN SELECT RAISE(IGNORE); END`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	for i, want := range []struct{ inserted, unchanged int64 }{{27, 0}, {0, 27}} {
		r := idemsync(t, dir, nil, "run", job, "--json")
		if r.code != 0 {
			t.Fatalf("run %d: exit %d: %s %s", i+1, r.code, r.stdout, r.stderr)
		}
		out := parseRun(t, r)
		if out.Inserted != want.inserted || out.Unchanged != want.unchanged || out.Skipped != 3 || out.Updated != 0 {
			t.Errorf("run %d: inserted %d, updated %d, unchanged %d, skipped %d; want %d inserted, %d unchanged, 3 skipped",
				i+1, out.Inserted, out.Updated, out.Unchanged, out.Skipped, want.inserted, want.unchanged)
		}
	}
	if got := len(readSQLite(t, filepath.Join(dir, "out.db"))); got != 27 {
		t.Errorf("table holds %d rows, want 27", got)
	}
}
