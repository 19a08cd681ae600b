package paging

import (
	"os/exec"
	"strings"
	"testing"
)

// The styles and the position codec sit below the engine: this package
// imports neither package sync nor any of its callers. Before the move,
// Position.Describe reached into the engine's windows and fan-out.
func TestPagingSitsBelowTheEngine(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the package's dependencies")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/idemsync/idemsync/sync" || strings.HasPrefix(dep, "github.com/idemsync/idemsync/jobfile") && dep != "github.com/idemsync/idemsync/jobfile/spec" {
			t.Errorf("package paging depends on %s", dep)
		}
	}
}
