package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// An invalid job file that could still be read names its job in the --json
// object of run, resume, replay and validate, so an alert says which job.
func TestInvalidSpecJSONNamesJob(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 10})
	good := styleJob("page", url, "sqlite:out.db")
	tests := []struct {
		name, spec, want string
	}{
		{"unknown key", strings.Replace(good, "  timeout: 5s", "  timeout: 5s\n  tiemout: 5s", 1), "orders-page"},
		{"bad style", strings.Replace(good, "style: page", "style: pagination", 1), "orders-page"},
		{"missing env var", strings.Replace(good, "  timeout: 5s", "  headers: {Authorization: \"Bearer ${IDEMSYNC_E2E_TOKEN}\"}\n  timeout: 5s", 1), "orders-page"},
		{"name from env", strings.Replace(strings.Replace(good, "name: orders-page", "name: ${IDEMSYNC_E2E_NAME:-named-by-default}", 1), "style: page", "style: nope", 1), "named-by-default"},
		{"invalid name", strings.Replace(good, "name: orders-page", "name: orders page", 1), "orders page"},
		{"missing name", strings.Replace(good, "name: orders-page\n", "", 1), ""},
		{"invalid yaml", good + "  bad: [unclosed\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", tt.spec)
			for _, args := range [][]string{{"run", job}, {"resume", job}, {"replay", job, "--from", "1"}, {"validate", job}} {
				r := idemsync(t, dir, nil, append(args, "--json")...)
				if r.code != 2 {
					t.Fatalf("%v: exit %d, want 2\n%s%s", args, r.code, r.stdout, r.stderr)
				}
				var got map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
					t.Fatalf("%v: stdout is not one JSON object: %v\n%s", args, err, r.stdout)
				}
				if got["job"] != tt.want {
					t.Errorf("%v: \"job\" = %q, want %q\n%s", args, got["job"], tt.want, r.stdout)
				}
				if got["status"] != "failed" || got["error"] == "" {
					t.Errorf("%v: want status failed and an error: %s", args, r.stdout)
				}
			}
		})
	}
}
