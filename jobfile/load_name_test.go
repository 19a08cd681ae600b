package jobfile

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSpecErrorName(t *testing.T) {
	env := map[string]string{"JOB": "from-env"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct{ name, yaml, want string }{
		{"plain", "name: orders\nsource: {tiemout: 1}\n", "orders"},
		{"from env", "name: ${JOB}\nbogus: 1\n", "from-env"},
		{"unset var", "name: ${NOPE}\nbogus: 1\n", ""},
		{"no name", "source: {}\n", ""},
		{"not a mapping", "- a\n- b\n", ""},
		{"not yaml", "name: [unclosed\n", ""},
		{"nested name only", "source: {name: x}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.yaml), "", lookup)
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Load: %v, want a *SpecError", err)
			}
			if got := SpecName(err); got != tt.want || se.Name != tt.want {
				t.Errorf("SpecName = %q (field %q), want %q", got, se.Name, tt.want)
			}
		})
	}
	if got := SpecName(errors.New("other")); got != "" {
		t.Errorf("SpecName of a non-spec error = %q", got)
	}
}

// A file of many resources, each with a problem, reads its name once: the
// error's name used to be read again from the whole file for each resource
// with a problem, so validate took time quadratic in the file's size (a
// file init --openapi --all wrote from GitHub's description, 397 resources
// left with decisions, took 18 s of CPU). Counted by the lookups of the
// name's variable: one per resource merged, and one for the error.
func TestSpecNameReadOncePerFile(t *testing.T) {
	const n = 300
	var b strings.Builder
	b.WriteString("name: ${JOB}\ndefaults: {source: {base_url: \"https://api.example.com\"}, target: {url: \"sqlite:x.db\"}}\nresources:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {name: r%d, source: {path: /r%d}, target: {table: r%d}}\n", i, i, i) // no key: a problem each
	}
	lookups := 0
	lookup := func(k string) (string, bool) {
		if k == "JOB" {
			lookups++
		}
		return "job", true
	}
	_, err := LoadResources([]byte(b.String()), "", lookup)
	var se *SpecError
	if !errors.As(err, &se) || len(se.Problems) != n || se.Name != "job" {
		t.Fatalf("LoadResources: %v, want a *SpecError of job with %d problems", err, n)
	}
	if lookups > n+1 {
		t.Errorf("name: read %d times for %d resources, want at most %d", lookups, n, n+1)
	}
}
