package jobfile

import (
	"os/exec"
	"strings"
	"testing"
)

// Loading a job file links no database driver: target URLs are checked
// through sink/targets, not the opener (docs/architecture.md). Before that,
// importing jobfile linked pgx and modernc.org/sqlite into every program
// that only reads YAML.
func TestLoaderLinksNoDatabaseDriver(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the package's dependencies")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "jackc/pgx") || strings.HasPrefix(dep, "modernc.org/sqlite") {
			t.Errorf("jobfile depends on the database driver package %s", dep)
		}
	}
}
