package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// The SQLite target file the binary creates has target.mode, 0600 by
// default like the state file; an existing target keeps its mode.
func TestTargetFileMode(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 30})
	for _, tc := range []struct {
		name, mode string
		want       os.FileMode
	}{{"default", "", 0o600}, {"0640", `"0640"`, 0o640}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			spec := styleJob("page", url, "sqlite:out.db")
			if tc.mode != "" {
				spec = strings.Replace(spec, "  columns:\n", "  mode: "+tc.mode+"\n  columns:\n", 1)
			}
			job := writeJob(t, dir, "job.yaml", spec)
			if r := idemsync(t, dir, nil, "run", job); r.code != 0 {
				t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
			}
			assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
			fi, err := os.Stat(filepath.Join(dir, "out.db"))
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != tc.want {
				t.Errorf("out.db mode %04o, want %04o", got, tc.want)
			}
		})
	}
	// An existing file keeps its mode.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "out.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "out.db"), 0o644); err != nil {
		t.Fatal(err)
	}
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	if r := idemsync(t, dir, nil, "run", job); r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if fi, err := os.Stat(filepath.Join(dir, "out.db")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("existing out.db: mode %v, %v; want 0644 kept", fi.Mode().Perm(), err)
	}
}
