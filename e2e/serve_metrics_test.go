package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Two job files of the served folder that give the same name: (a copy
// kept as orders-old.yaml, a symlink under a second name) are one job of
// the state, and /metrics shows it once: a series that appears twice in
// one exposition is invalid, and Prometheus drops the scrape's samples
// (docs/serve.md, "Endpoints"; docs/operations.md, "Metrics").
func TestServeMetricsOneSeriesPerJob(t *testing.T) {
	_, apiURL := startAPI(t, fakeapi.Options{Records: 60})
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	body := styleJob("page", apiURL, "sqlite:out.db")
	writeJob(t, jobs, "orders.yaml", body)
	writeJob(t, jobs, "orders-old.yaml", body)
	if err := os.Symlink("orders.yaml", filepath.Join(jobs, "current.yaml")); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, dir, jobs, nil)
	if code, body := s.do(t, "POST", "/jobs/orders/run", ""); code != 200 {
		t.Fatalf("run: %d %s", code, body)
	}
	code, prom := s.do(t, "GET", "/metrics", "")
	if code != 200 {
		t.Fatalf("metrics: %d %s", code, prom)
	}
	seen := map[string]bool{}
	series := regexp.MustCompile(`^(\S+) \S+$`)
	for _, line := range strings.Split(strings.TrimSpace(prom), "\n") {
		if strings.HasPrefix(line, "#") {
			if seen[line] {
				t.Errorf("metadata line twice: %s", line)
			}
			seen[line] = true
			continue
		}
		m := series.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("not a sample line: %q", line)
			continue
		}
		if seen[m[1]] {
			t.Errorf("series twice: %s", m[1])
		}
		seen[m[1]] = true
	}
	if !seen[`idemsync_pages_total{job="orders-page",resource="orders-page"}`] ||
		!seen[`idemsync_serve_run_in_progress{job="orders-page"}`] {
		t.Errorf("metrics lack the job:\n%s", prom)
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", prom)
	}
}

// idemsync_serve_run_in_progress is 1 while this server runs the job,
// also after the job file was renamed (or a copy took its place) during
// the run: the gauge follows the job's name, not the file's path.
func TestServeMetricsInProgressAfterRename(t *testing.T) {
	api, apiURL := startAPI(t, fakeapi.Options{Records: 3000, Latency: 20 * time.Millisecond})
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJob(t, jobs, "orders.yaml", styleJob("page", apiURL, "sqlite:out.db"))
	s := startServe(t, dir, jobs, nil)
	run := s.runAsync(t, "orders")
	deadline := time.Now().Add(30 * time.Second)
	for st := s.jobStatus(t, "orders"); st.Status != "running" || st.LastRun == nil || st.LastRun.Pages < 1; st = s.jobStatus(t, "orders") {
		if time.Now().After(deadline) {
			t.Fatalf("the run never showed running: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.Rename(filepath.Join(jobs, "orders.yaml"), filepath.Join(jobs, "orders-v2.yaml")); err != nil {
		t.Fatal(err)
	}
	code, prom := s.do(t, "GET", "/metrics", "")
	if code != 200 || promSample(t, []byte(prom), `idemsync_serve_run_in_progress\{job="orders-page"\}`) != 1 {
		t.Errorf("metrics during the run of a renamed job file: %d\n%s", code, prom)
	}
	if code, body := s.do(t, "POST", "/jobs/orders-v2/run", ""); code != 409 || !strings.Contains(body, `"exit_code":4`) {
		t.Errorf("a run of the renamed file during the run: %d %s, want 409, exit 4", code, body)
	}
	api.SetLatency(0)
	if r := <-run; r.code != 200 {
		t.Errorf("the run: %d %s", r.code, r.body)
	}
	if _, prom = s.do(t, "GET", "/metrics", ""); promSample(t, []byte(prom), `idemsync_serve_run_in_progress\{job="orders-page"\}`) != 0 {
		t.Errorf("metrics after the run:\n%s", prom)
	}
}
