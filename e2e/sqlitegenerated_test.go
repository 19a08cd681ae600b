package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// A SQLite column the job writes that the user declared generated (AS …)
// is refused when the run prepares the table, naming it: SQLite's
// table_info leaves generated columns out, so idemsync took it for missing
// and failed on "duplicate column name: v" from its own ADD COLUMN
// (docs/job-file.md, "target").
func TestSQLiteGeneratedColumnRefused(t *testing.T) {
	job := collationJob(t, "sqlite:out.db", "t")
	dir := filepath.Dir(job)
	execAll(t, openSQLite(t, filepath.Join(dir, "out.db")), `CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT AS (upper(id)))`)
	r := idemsync(t, dir, nil, "run", job, "--json")
	got := parseRun(t, r)
	if r.code != 1 || !strings.Contains(got.Error, `column "v"`) || !strings.Contains(got.Error, "generated") {
		t.Fatalf("a generated column the job writes: exit %d, error %q, want exit 1 naming the column as generated\nstderr: %s", r.code, got.Error, r.stderr)
	}
}
