package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job whose table is unqualified writes the table its search_path finds
// first, and registers its writer in that table's schema: a job naming
// that table with its schema is the same writer check, and the second of
// two such jobs with deletes is refused (exit 2). Before, the unqualified
// job registered in current_schema(), the search_path's first existing
// schema, although the table lay in a later one: both jobs wrote one
// table, each sweeping the other's rows (docs/deletions.md, "One writer
// per swept table").
func TestPostgresOwnersSearchPath(t *testing.T) {
	pg := postgresURL(t)
	early, late := freshSchema(t, pg), freshSchema(t, pg)
	dir := t.TempDir()
	for _, sub := range []string{"x", "y"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	apiA, apiB := idsAPI(t, 1, 10), idsAPI(t, 11, 20)
	qualified := delTarget{url: pg, table: late + ".items"}
	onPath := delTarget{url: pg + "&search_path=" + early + "," + late, table: "items"}
	jobB := writeJob(t, filepath.Join(dir, "y"), "del.yaml", withTotal(delJob(apiB.URL, qualified, "hard", "", "")))
	jobA := writeJob(t, filepath.Join(dir, "x"), "del.yaml", withTotal(delJob(apiA.URL, onPath, "hard", "", "")))
	delRun(t, dir, 0, "run", jobB)
	r := idemsync(t, dir, nil, "run", jobA)
	if r.code != 2 || !strings.Contains(r.stderr, realPathOf(t, filepath.Join(dir, "y", ".idemsync", "state.db"))) {
		t.Fatalf("a second job with deletes on %s.items, unqualified on its search_path: exit %d, want 2 naming the owner\nstdout: %s\nstderr: %s",
			late, r.code, r.stdout, r.stderr)
	}
}
