package jobfile

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docBlocks returns the YAML blocks of a doc page that hold a top-level
// source: or resources: (the job file examples), with their line numbers.
func docBlocks(t *testing.T, path string) map[int]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```yaml" {
			continue
		}
		start := i + 1
		var b strings.Builder
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			b.WriteString(lines[i] + "\n")
		}
		if regexp.MustCompile(`(?m)^(source|resources):`).MatchString(b.String()) {
			out[start] = b.String()
		}
	}
	return out
}

// Every job file example in the docs loads: an example may leave out name
// and target (they are added here), and its ${VAR}s are set.
func TestDocExamplesLoad(t *testing.T) {
	anyVar := func(string) (string, bool) { return "x", true }
	n := 0
	for _, page := range []string{"../docs/job-file.md", "../docs/pagination.md", "../README.md"} {
		for line, block := range docBlocks(t, page) {
			spec := block
			if regexp.MustCompile(`(?m)^resources:`).MatchString(spec) {
				if _, err := LoadResources([]byte(spec), "/jobs/example.yaml", anyVar); err != nil {
					t.Errorf("%s:%d: the example does not load: %v\n%s", page, line, err, block)
				}
				n++
				continue
			}
			if !regexp.MustCompile(`(?m)^name:`).MatchString(spec) {
				spec = "name: example\n" + spec
			}
			if !regexp.MustCompile(`(?m)^target:`).MatchString(spec) {
				spec += "target: {url: sqlite:out.db, table: t, key: [id]}\n"
			}
			if _, err := Load([]byte(spec), "/jobs/example.yaml", anyVar); err != nil {
				t.Errorf("%s:%d: the example does not load: %v\n%s", page, line, err, block)
			}
			n++
		}
	}
	t.Logf("%d examples loaded", n)
	if n < 5 {
		t.Fatalf("found %d examples in the docs; the test reads them wrong", n)
	}
}
