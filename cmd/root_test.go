package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/schema"
	idsync "github.com/idemsync/idemsync/sync"
)

// idemsync completion SHELL prints a completion script for each shell.
func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "__start_idemsync",
		"zsh":        "#compdef idemsync",
		"fish":       "complete -c idemsync",
		"powershell": "Register-ArgumentCompleter",
	} {
		r := execute(t, false, "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, marker) {
			t.Errorf("completion %s: exit %d, no %q in %d bytes: %s", shell, r.code, marker, len(r.stdout), r.stderr)
		}
	}
	if r := execute(t, false, "completion", "tcsh"); r.code != 2 {
		t.Errorf("completion tcsh: exit %d, want 2", r.code)
	}
}

// Job file arguments complete to YAML files.
func TestCompleteJobFiles(t *testing.T) {
	r := execute(t, false, "__complete", "run", "")
	if r.code != 0 || !strings.Contains(r.stdout, "yaml") || !strings.Contains(r.stdout, ":8") {
		t.Errorf("__complete run: exit %d: %q", r.code, r.stdout)
	}
}

// idemsync schema prints the committed schema, byte for byte.
func TestSchemaCommand(t *testing.T) {
	r := execute(t, false, "schema")
	if r.code != 0 || r.stdout != string(schema.JSON()) {
		t.Fatalf("exit %d, output differs from schema.JSON()", r.code)
	}
	committed, err := os.ReadFile("../schema/job.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, []byte(r.stdout)) {
		t.Error("schema/job.schema.json differs from `idemsync schema`: run go test ./schema -update")
	}
	if r := execute(t, false, "schema", "extra"); r.code != 2 {
		t.Errorf("schema extra: exit %d, want 2", r.code)
	}
}

// version prints what -ldflags -X stamps into the sync package.
func TestVersion(t *testing.T) {
	old := [3]string{idsync.Version, idsync.Commit, idsync.Date}
	idsync.Version, idsync.Commit, idsync.Date = "1.2.3", "abc1234", "2024-05-01T00:00:00Z"
	t.Cleanup(func() { idsync.Version, idsync.Commit, idsync.Date = old[0], old[1], old[2] })
	r := execute(t, false, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "idemsync 1.2.3 (commit abc1234, built 2024-05-01T00:00:00Z, go") {
		t.Errorf("version: %q", r.stdout)
	}
	r = execute(t, false, "version", "--json")
	var v map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v["version"] != "1.2.3" || v["commit"] != "abc1234" || v["date"] != "2024-05-01T00:00:00Z" {
		t.Errorf("version --json: %v: %q", err, r.stdout)
	}
}

// An unknown command is a usage error; a job file that cannot be read is
// one too, with --json as a result object. (Each command's own flags and
// arguments: its runF tests, e.g. TestRunUsageErrors.)
func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"nope"},
		{"run"},
		{"run", "a.yaml", "b.yaml"},
		{"run", "a.yaml", "--bogus"},
		{"replay", "a.yaml"},
		{"run", "a.yaml", "--max-pages", "-1"},
	} {
		if r := execute(t, false, args...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want 2: %s", args, r.code, r.stderr)
		}
	}
	r := execute(t, false, "run", "missing.yaml", "--json")
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 2 || out["exit_code"] != float64(2) || out["status"] != "failed" {
		t.Errorf("run missing.yaml --json: exit %d: %q", r.code, r.stdout)
	}
}
