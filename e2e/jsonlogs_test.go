package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// jsonLines fails unless every line of s is a JSON object, and returns them.
func jsonLines(t *testing.T, what, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("%s: a line that is not JSON: %q", what, line)
			continue
		}
		out = append(out, m)
	}
	return out
}

// With --log-format json everything on stderr is a JSON line, errors and
// their hints included, and stdout carries the summary only when asked
// for with --json (issue 28: the cron recipe appends both streams to one
// log file). docs/operations.md, Logs.
func TestJSONLogsAreJSONLines(t *testing.T) {
	t.Parallel()
	_, url := startAPI(t, fakeapi.Options{Records: 60})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	r := idemsync(t, dir, nil, "run", job, "--log-format", "json")
	if r.code != 0 || r.stdout != "" {
		t.Errorf("run --log-format json: exit %d, stdout %q: want 0 and nothing on stdout", r.code, r.stdout)
	}
	if lines := jsonLines(t, "run", r.stderr); len(lines) == 0 {
		t.Errorf("run --log-format json logged nothing")
	}

	// A permanent failure: the error and its hint are JSON too.
	spec := strings.Replace(styleJob("page", url, "sqlite:out.db"), "name: orders-page", "name: bad", 1)
	bad := writeJob(t, dir, "bad.yaml", strings.Replace(spec, url+"/page", url+"/missing", 1))
	r = idemsync(t, dir, nil, "run", bad, "--log-format", "json")
	if r.code != 1 || r.stdout != "" {
		t.Errorf("failing run: exit %d, stdout %q: want 1 and nothing on stdout", r.code, r.stdout)
	}
	found := false
	for _, m := range jsonLines(t, "failing run", r.stderr) {
		if m["level"] == "ERROR" && strings.Contains(m["msg"].(string), "404") && m["exit_code"] == float64(1) {
			found = true
		}
	}
	if !found {
		t.Errorf("failing run: no ERROR line with the error and exit code:\n%s", r.stderr)
	}

	// An invalid job file fails before any run: still JSON.
	invalid := writeJob(t, dir, "invalid.yaml", strings.Replace(styleJob("page", url, "sqlite:out.db"), "style: page", "style: pages", 1))
	r = idemsync(t, dir, nil, "run", invalid, "--log-format", "json")
	if r.code != 2 || len(jsonLines(t, "invalid job file", r.stderr)) == 0 {
		t.Errorf("invalid job file: exit %d, stderr %q", r.code, r.stderr)
	}

	// --json: the summary object on stdout, the logs JSON on stderr.
	r = idemsync(t, dir, nil, "run", job, "--log-format", "json", "--json")
	jsonLines(t, "run --json stderr", r.stderr)
	if out := jsonLines(t, "run --json stdout", r.stdout); r.code != 0 || len(out) != 1 || out[0]["status"] != "completed" {
		t.Errorf("run --json: exit %d, stdout %q", r.code, r.stdout)
	}
}
