package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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
