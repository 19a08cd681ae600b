package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A job's state file moves to PostgreSQL with state migrate: an old cron
// line still pointed at the file exits 2 naming where the state went (the
// password hidden), the job pointed at the new state continues its
// unfinished run there, and the state exported from PostgreSQL imports
// into a new state file that reads the same (docs/operations.md, "Moving
// a job between hosts").
func TestStateMigrate(t *testing.T) {
	pg := postgresURL(t)
	state := pgStateURL(t, pg, freshSchema(t, pg), "2s")
	api, apiURL := startAPI(t, fakeapi.Options{Records: 100})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", apiURL, "sqlite:out.db"))
	file := filepath.Join(dir, ".idemsync", "state.db")
	if j := runCode(t, dir, nil, 0, "run", job, "--max-pages", "2"); j.Status != "partial" {
		t.Fatalf("first run: %+v", j)
	}
	r := idemsync(t, dir, nil, "state", "migrate", "--from", file, "--to", state)
	if r.code != 0 || !strings.Contains(r.stdout, "verified") {
		t.Fatalf("state migrate: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	pw, _ := mustURL(t, pg).User.Password()
	r = idemsync(t, dir, nil, "run", job)
	if r.code != 2 || !strings.Contains(r.stderr, "moved to postgres://") || pw != "" && strings.Contains(r.stderr, pw) {
		t.Fatalf("a run against the old file: exit %d, want 2 naming the new state without its password: %s", r.code, r.stderr)
	}
	if r := idemsync(t, dir, nil, "state", "migrate", "--from", file, "--to", state); r.code == 0 {
		t.Errorf("a second migrate of the moved file succeeded: %s", r.stdout)
	}
	j := runCode(t, dir, nil, 0, "run", job, "--state", state)
	if j.RunID != 1 || j.Status != "completed" {
		t.Errorf("the run on the new state: %+v, want run 1 continued to completed", j)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))

	dump := filepath.Join(dir, "dump.json")
	if r := idemsync(t, dir, nil, "state", "export", "--state", state, "--out", dump); r.code != 0 {
		t.Fatalf("state export: exit %d: %s", r.code, r.stderr)
	}
	back := filepath.Join(dir, "back.db")
	if r := idemsync(t, dir, nil, "state", "import", dump, "--state", back); r.code != 0 {
		t.Fatalf("state import: exit %d: %s", r.code, r.stderr)
	}
	want, got := statusOf(t, dir, job, "--state", state), statusOf(t, dir, job, "--state", back)
	if got.LastRun == nil || want.LastRun == nil || got.LastRun.RunID != want.LastRun.RunID || got.LastRun.Records != want.LastRun.Records ||
		got.Checkpoint != want.Checkpoint {
		t.Errorf("status of the imported file %+v differs from PostgreSQL's %+v", got, want)
	}
	if r := idemsync(t, dir, nil, "state", "import", dump, "--state", back); r.code == 0 {
		t.Error("an import into a state holding jobs succeeded")
	}
}
