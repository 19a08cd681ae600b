package cmd

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// A state URL of a database idemsync keeps no state in is invalid usage
// (exit 2) naming it without its password; a postgres URL is never taken
// for a missing file, and is printed without its password.
func TestStateURLs(t *testing.T) {
	_, err := openStore(context.Background(), "mysql://u:s3cret@db/x", nil)
	if contract.ClassOf(err) != contract.Invalid || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "mysql://u:xxxxx@db/x") {
		t.Errorf("openStore(mysql://…) = %v, want exit 2 naming the redacted URL", err)
	}
	pg := "postgres://u:s3cret@db/x?schema=s"
	if stateMissing(pg) {
		t.Error("stateMissing took a postgres URL for a missing file")
	}
	for name, got := range map[string]string{"stateName": stateName(pg), "realPath": realPath(pg)} {
		if strings.Contains(got, "s3cret") || !strings.Contains(got, "db/x") {
			t.Errorf("%s(%s) = %s", name, pg, got)
		}
	}
}

// A key=value connection string given as the state (the job file's
// state:, $IDEMSYNC_STATE, --state) is no SQLite path: every command
// refuses it (exit 2, naming it without its password and saying to write
// a postgres:// URL) and no file named after it, password and all, is
// created.
func TestStateKeyValueDSNRefused(t *testing.T) {
	const pw = "dsn-pw-Wq4Zn8"
	dsn := "host=127.0.0.1 port=5432 user=app password=" + pw + " dbname=x"
	dir := t.TempDir()
	t.Chdir(dir)
	job := writeJob(t, dir, "job.yaml", strings.Replace(pageJob("dsn", "http://127.0.0.1:1/items"), "state: state.db", "state: \""+dsn+"\"", 1))
	plain := writeJob(t, dir, "plain.yaml", pageJob("plain", "http://127.0.0.1:1/items"))
	for _, args := range [][]string{
		{"run", job}, {"status", job}, {"status", job, "--json"}, {"prune", job},
		{"status", "--state", dsn}, {"status", plain, "--state", dsn}, {"run", plain, "--state", dsn}, {"prune", "--state", dsn},
	} {
		r := execute(t, false, args...)
		out := r.stdout + r.stderr
		if r.code != 2 || !strings.Contains(out, "key=value connection string") || !strings.Contains(out, "password=xxxxx") ||
			args[len(args)-1] != "--json" && !strings.Contains(r.stderr, "postgres://USER:PASSWORD@") {
			t.Errorf("%v: exit %d, want 2 naming the connection string without its password and a postgres:// URL\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, pw) {
			t.Errorf("%v prints the password:\n%s%s", args, r.stdout, r.stderr)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), pw) {
			t.Errorf("a file named after the connection string was created: %s", e.Name())
		}
	}
}
