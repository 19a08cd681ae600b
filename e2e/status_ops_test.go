package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// The cron recipe's alert sends the operator to `idemsync status JOB.yaml`
// from a shell that has neither the job's secrets nor the crontab's
// IDEMSYNC_STATE (issue 28). Reading state needs no credentials: status
// loads the job file with its unset ${VAR}s left unexpanded. Without the
// state file the scheduler used, it says where it looked and how to point
// it elsewhere; with --state, it finds the runs.
func TestStatusFromAnOperatorShell(t *testing.T) {
	t.Parallel()
	_, url := startAPI(t, fakeapi.Options{Records: 60, Token: "s3cret-token-value"})
	dir := t.TempDir()
	spec := strings.Replace(styleJob("page", url, "sqlite:out.db"), "  timeout: 5s\n",
		"  timeout: 5s\n  auth: {type: bearer, token: \"${API_TOKEN}\"}\n", 1)
	job := writeJob(t, dir, "orders.yaml", spec)
	state := filepath.Join(t.TempDir(), "state.db")
	runCode(t, dir, []string{"API_TOKEN=s3cret-token-value", "IDEMSYNC_STATE=" + state}, 0, "run", job)

	// The operator's shell: no API_TOKEN, the state named on the command line.
	r := idemsync(t, dir, nil, "status", job, "--state", state, "--json")
	var out struct {
		Jobs []jobStatusJSON `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); r.code != 0 || err != nil || len(out.Jobs) != 1 {
		t.Fatalf("status without API_TOKEN: exit %d, want 0: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if out.Jobs[0].Status != "completed" {
		t.Errorf("status without API_TOKEN: %q, want completed", out.Jobs[0].Status)
	}
	if strings.Contains(r.stdout+r.stderr, "s3cret") {
		t.Errorf("status printed the token")
	}
	if text := idemsync(t, dir, nil, "status", job, "--state", state); text.code != 0 || !strings.Contains(text.stdout, "completed") {
		t.Errorf("status (text) without API_TOKEN: exit %d\n%s%s", text.code, text.stdout, text.stderr)
	}

	// Neither API_TOKEN nor IDEMSYNC_STATE: never_run, saying which file it
	// read and how to name the scheduler's.
	r = idemsync(t, dir, nil, "status", job)
	if r.code != 0 || !strings.Contains(r.stdout, "never") {
		t.Fatalf("status without IDEMSYNC_STATE: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	where := filepath.Join(dir, ".idemsync", "state.db")
	for _, want := range []string{where, "--state", "IDEMSYNC_STATE"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status of a job with no state found does not name %q:\n%s", want, r.stdout)
		}
	}
}
