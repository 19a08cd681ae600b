package e2e

import (
	"encoding/json"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// resourceRunJSON is one resource of a multi-resource --json object: a v1
// run object plus its resource's name.
type resourceRunJSON struct {
	runJSON
	Resource     string `json:"resource"`
	Sweep        string `json:"sweep"`
	SweepSkipped string `json:"sweep_skipped"`
}

// jobRunJSON is the --json object of a multi-resource run (docs/job-file.md,
// "Running a file with several resources").
type jobRunJSON struct {
	Job        string            `json:"job"`
	Status     string            `json:"status"`
	ExitCode   int               `json:"exit_code"`
	DurationMS int64             `json:"duration_ms"`
	Error      string            `json:"error"`
	Resources  []resourceRunJSON `json:"resources"`
}

// resource returns the entry of resource name, failing when there is none.
func (j jobRunJSON) resource(t *testing.T, name string) resourceRunJSON {
	t.Helper()
	for _, r := range j.Resources {
		if r.Resource == name {
			return r
		}
	}
	t.Fatalf("no resource %q in --json resources %+v", name, j.Resources)
	return resourceRunJSON{}
}

// parseJobRun parses the multi-resource --json object on stdout and checks it
// has every key docs/job-file.md names for it.
func parseJobRun(t *testing.T, r result) jobRunJSON {
	t.Helper()
	var raw struct {
		Resources []map[string]any `json:"resources"`
	}
	var top map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &top); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\nexit %d\nstdout: %s\nstderr: %s", err, r.code, r.stdout, r.stderr)
	}
	for _, k := range []string{"job", "status", "exit_code", "duration_ms", "resources"} {
		if _, ok := top[k]; !ok {
			t.Errorf("--json output lacks %q: %s", k, r.stdout)
		}
	}
	_ = json.Unmarshal([]byte(r.stdout), &raw)
	for i, res := range raw.Resources {
		for _, k := range []string{"resource", "job", "run_id", "kind", "status", "pages", "records", "inserted", "updated", "unchanged", "skipped", "checkpoint", "hwm", "duration_ms", "error"} {
			if _, ok := res[k]; !ok {
				t.Errorf("--json resources[%d] lacks %q: %v", i, k, res)
			}
		}
	}
	var out jobRunJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("--json object: %v: %s", err, r.stdout)
	}
	if out.ExitCode != r.code {
		t.Errorf("--json says exit_code %d, the process exited %d", out.ExitCode, r.code)
	}
	return out
}

// runJob runs the binary with --json, fails the test unless it exits with
// code, and returns the parsed multi-resource object.
func runJob(t *testing.T, dir string, code int, args ...string) jobRunJSON {
	t.Helper()
	r := idemsync(t, dir, nil, append(args, "--json")...)
	if r.code != code {
		t.Fatalf("idemsync %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, r.code, code, r.stdout, r.stderr)
	}
	return parseJobRun(t, r)
}

// resourceStatusJSON is one entry of status --json for a multi-resource job.
type resourceStatusJSON struct {
	jobStatusJSON
	Resource string    `json:"resource"`
	Runs     []runJSON `json:"runs"`
}

// statusEntries returns the entries of `status JOB --json` (plus args),
// keyed by resource.
func statusEntries(t *testing.T, dir, job string, args ...string) map[string]resourceStatusJSON {
	t.Helper()
	r := idemsync(t, dir, nil, append([]string{"status", job, "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("status: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	var out struct {
		Jobs []resourceStatusJSON `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("status --json: %v: %s", err, r.stdout)
	}
	m := map[string]resourceStatusJSON{}
	for _, e := range out.Jobs {
		if _, dup := m[e.Resource]; dup {
			t.Fatalf("status --json: resource %q twice: %s", e.Resource, r.stdout)
		}
		m[e.Resource] = e
	}
	return m
}

// childRequestCounts returns the requests of every parent's children route
// since the last ResetCounters, by parent id (parents with none left out).
func childRequestCounts(s *fakeapi.Shop) map[int]int {
	out := map[int]int{}
	for _, p := range s.Parents() {
		if n := s.ChildRequests(p.ID); n > 0 {
			out[p.ID] = n
		}
	}
	return out
}
