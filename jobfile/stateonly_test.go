package jobfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LoadForState reads a job file whose ${VAR}s are not set, but not one
// whose state file depends on one; a ${VAR:-default} keeps its default.
func TestLoadForState(t *testing.T) {
	t.Setenv("LFS_SET", "tenant-one")
	const body = `name: orders
state: %s
source:
  url: https://${LFS_HOST_UNSET}/orders?tenant=${LFS_SET}
  auth: {type: bearer, token: "${LFS_TOKEN_UNSET}"}
pagination: {style: page, size_param: per_page, size: 50}
target: {url: "sqlite:out.db", table: orders, key: [id]}
`
	dir := t.TempDir()
	write := func(state string) string {
		p := filepath.Join(dir, "orders.yaml")
		if err := os.WriteFile(p, []byte(strings.Replace(body, "%s", state, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := LoadFile(write("${LFS_DIR_UNSET:-/var/lib/x}/state.db")); err == nil || !strings.Contains(err.Error(), "LFS_") {
		t.Fatalf("LoadFile with unset variables: %v, want an error naming one", err)
	}
	f, unset, err := LoadForState(write("${LFS_DIR_UNSET:-/var/lib/x}/state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Resources[0].Job.StatePath; got != "/var/lib/x/state.db" {
		t.Errorf("state %q, want the default of ${LFS_DIR_UNSET:-...}", got)
	}
	if strings.Join(unset, ",") != "LFS_HOST_UNSET,LFS_TOKEN_UNSET" {
		t.Errorf("unset %v", unset)
	}
	if !strings.Contains(f.Resources[0].Job.Secrets.Redact("tenant-one"), "redacted") {
		t.Errorf("a variable that is set is still a secret")
	}
	_, _, err = LoadForState(write("${LFS_DIR_UNSET}/state.db"))
	if err == nil || !strings.Contains(err.Error(), "state: environment variable LFS_DIR_UNSET is not set") {
		t.Errorf("state from an unset variable: %v, want an error naming it", err)
	}
}
