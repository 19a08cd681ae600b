package spec

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The job file's types sit below the engine: this package does not import
// package sync, and the engine does not parse YAML (docs/architecture.md).
// Before the move, sync/spec.go imported yaml.v3 and every package that
// needed a Target compiled against the whole engine.
func TestSpecSitsBelowTheEngine(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the packages' imports")
	}
	list := func(args ...string) []string {
		out, err := exec.Command(goBin, append([]string{"list"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %v: %v\n%s", args, err, out)
		}
		return strings.Fields(string(out))
	}
	if deps := list("-deps", "."); slices.Contains(deps, "github.com/idemsync/idemsync/sync") {
		t.Error("package spec depends on the engine (package sync)")
	}
	if imps := list("-f", `{{join .Imports " "}}`, "../../sync"); slices.Contains(imps, "gopkg.in/yaml.v3") {
		t.Error("the engine (package sync) imports gopkg.in/yaml.v3")
	}
}
