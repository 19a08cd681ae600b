package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The launcher prints what it is doing before the long first build only
// if it is itself quick to build: it must import nothing but the standard
// library (issue 28: `go run ./examples/demo` was silent for minutes).
func TestLauncherImportsOnlyTheStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/idemsync/idemsync/examples/demo" {
			t.Errorf("the demo launcher imports %s: its build is no longer quick", p)
		}
	}
}
