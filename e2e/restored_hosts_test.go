package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Two hosts sharing a job's state in PostgreSQL, each with an SQLite
// target file of its own at the same path (docs/operations.md, "A second
// host"): each file is a target of its own, so a host whose file lags the
// marker the other host's pages raised starts from the beginning (and its
// run still ends equal to the source), and says why in a warning that names
// the setup and the page of the docs, instead of only "restored".
// The two hosts are one folder path that is a link switched between two
// folders.
func TestSecondHostWithOwnSQLiteFile(t *testing.T) {
	pg := postgresURL(t)
	api, url := startAPI(t, fakeapi.Options{Records: 100, Seed: 3})
	env := []string{"IDEMSYNC_STATE=" + pgStateURL(t, pg, freshSchema(t, pg), "30s")}
	base := t.TempDir()
	here := filepath.Join(base, "here")
	host := func(h string) {
		if err := os.MkdirAll(filepath.Join(base, h), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(here); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(base, h), here); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("hwm", url, "sqlite:"+here+"/out.db"))
	host("a")
	runCode(t, dir, env, 0, "run", job)
	host("b")
	runCode(t, dir, env, 0, "run", job)
	api.Update(5, func(r *fakeapi.Record) { r.Name = "changed" })
	host("a")
	r := idemsync(t, dir, env, "run", job, "--json")
	if r.code != 0 || parseRun(t, r).Status != "completed" {
		t.Fatalf("host a: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(base, "a", "out.db")), sourceRows(api))
	var warned bool
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "another host") && strings.Contains(l, `A second host`) {
			warned = true
		}
	}
	if !warned {
		t.Errorf("host a's run over its own file, behind host b's marker, does not warn of the setup:\n%s", r.stderr)
	}
	// A state file is one host's: a restore under it warns of nothing.
	if os.Getenv("IDEMSYNC_TEST_STATE") == "postgres" {
		return // testEnv gives every run a state in PostgreSQL
	}
	sdir := t.TempDir()
	sjob := writeJob(t, sdir, "job.yaml", styleJob("hwm", url, "sqlite:out.db"))
	runCode(t, sdir, nil, 0, "run", sjob, "--max-pages", "2")
	vacuumInto(t, filepath.Join(sdir, "out.db"), filepath.Join(sdir, "backup.db"))
	runCode(t, sdir, nil, 0, "run", sjob)
	restoreSQLite(t, filepath.Join(sdir, "backup.db"), filepath.Join(sdir, "out.db"))
	r = idemsync(t, sdir, nil, "run", sjob, "--json")
	if r.code != 0 || !strings.Contains(r.stderr, "restored") || strings.Contains(r.stderr, "another host") {
		t.Errorf("a restore under a state file: exit %d\n%s", r.code, r.stderr)
	}
}
