package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/fakeapi"
	httpsource "github.com/idemsync/idemsync/source/http"
	idsync "github.com/idemsync/idemsync/sync"
)

// flakyAPI fails the first two list requests (429s with Retry-After: 1,
// capped by max_wait), so that a run retries before it progresses.
func flakyAPI(t *testing.T, records int) string {
	t.Helper()
	_, url := startAPI(t, fakeapi.Options{Records: records, Faults: fakeapi.Faults{
		Rate: 1, Limit: 2, Kinds: []string{fakeapi.Fault429Seconds},
	}})
	return url
}

// Every JSON log line of a run carries job and run_id: the page lines with
// position and counts, and the retries at warn with their reason.
func TestRunLogsCarryJobAndRunID(t *testing.T) {
	url := flakyAPI(t, 120)
	job := writeJob(t, t.TempDir(), "orders.yaml", pageJob("orders", url))
	r := execute(t, false, "run", job, "--log-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var pages, retries int
	started := false // lines before the run is recorded have no run id yet
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("not a JSON log line: %q", line)
		}
		started = started || l["msg"] == "starting run"
		if l["job"] != "orders" || started && l["run_id"] != float64(1) {
			t.Errorf("line without job=orders and run_id=1: %s", line)
		}
		switch l["msg"] {
		case "page committed":
			pages++
			for _, k := range []string{"position", "records", "inserted", "updated", "unchanged", "skipped", "ms"} {
				if _, ok := l[k]; !ok {
					t.Errorf("page line lacks %s: %s", k, line)
				}
			}
			if l["level"] != "INFO" {
				t.Errorf("page line not at info: %s", line)
			}
		case "retrying request":
			retries++
			if l["level"] != "WARN" || l["reason"] == nil || l["reason"] == "" {
				t.Errorf("retry line not at warn with a reason: %s", line)
			}
		}
	}
	if pages != 3 || retries != 2 {
		t.Errorf("%d page lines and %d retry lines, want 3 and 2:\n%s", pages, retries, r.stderr)
	}
	// With JSON logs the "run finished" line is the summary; stdout stays
	// empty without --json (docs/operations.md, Logs).
	if r.stdout != "" || !strings.Contains(r.stderr, `"msg":"run finished"`) {
		t.Errorf("stdout %q, want none; the summary is the run finished line", r.stdout)
	}
}

func TestRunLogFormats(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 10})
	job := writeJob(t, t.TempDir(), "orders.yaml", pageJob("orders", url))
	r := execute(t, false, "run", job, "--log-format", "text")
	if r.code != 0 || !strings.Contains(r.stderr, `level=INFO msg="page committed" job=orders run_id=1 position="page 1"`) {
		t.Errorf("text log: exit %d:\n%s", r.code, r.stderr)
	}
	r = execute(t, false, "run", job, "--quiet")
	if r.code != 0 || r.stderr != "" || r.stdout != "" {
		t.Errorf("--quiet printed: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"--log-format", "xml"}, {"--log-level", "loud"}} {
		if r := execute(t, false, append([]string{"run", job}, args...)...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2", args, r.code)
		}
	}
}

// At a terminal the bar is drawn on stderr while the run progresses:
// pages of the total, records, the rate, the position, and the retry being
// waited for; log lines are printed above it.
func TestProgressBarAtATerminal(t *testing.T) {
	url := flakyAPI(t, 120)
	job := writeJob(t, t.TempDir(), "orders.yaml", pageJob("orders", url))
	r := execute(t, true, "run", job)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"\r", "orders · page 1 · 50 records", "rec/s", "(2/3)", "retrying in 20ms", "rate limited, retrying in", `msg="run finished"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%q", want, r.stderr)
		}
	}
	if strings.Contains(r.stdout, "\r") || !strings.Contains(r.stdout, "completed") {
		t.Errorf("stdout: %q", r.stdout)
	}
}

// Off a terminal, or with --quiet, nothing of the bar is drawn.
func TestNoProgressBarOffATerminal(t *testing.T) {
	url := flakyAPI(t, 120)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		tty  bool
		args []string
	}{
		{"not a terminal", false, nil},
		{"not a terminal, json", false, []string{"--json"}},
		{"quiet terminal", true, []string{"--quiet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := writeJob(t, dir, "orders.yaml", pageJob("orders", url))
			r := execute(t, tc.tty, append([]string{"run", job, "--restart"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			for _, bar := range []string{"\r", "rec/s", "█", "retrying in"} {
				if strings.Contains(r.stderr, bar) || strings.Contains(r.stdout, bar) {
					t.Errorf("the bar was drawn (%q found):\n%q", bar, r.stderr)
				}
			}
		})
	}
}

// The bar's text, event by event, at a fixed clock.
func TestProgressEvents(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressTo(&buf, "orders")
	t0 := p.start
	p.now = func() time.Time { return t0.Add(2 * time.Second) }
	p.page(idsync.PageEvent{Position: "page 1", Records: 100, Total: contract.Counts{Inserted: 100}, Pages: 1, TotalPgs: 10})
	if got := p.describe(); got != "orders · page 1 · 100 records · 50 rec/s" {
		t.Errorf("after a page: %q", got)
	}
	p.retry(httpsource.RetryEvent{Attempt: 1, Wait: 4 * time.Second, Reason: "HTTP 429"})
	if got := p.describe(); !strings.HasSuffix(got, " · rate limited, retrying in 4s") {
		t.Errorf("after a 429: %q", got)
	}
	p.retry(httpsource.RetryEvent{Attempt: 2, Wait: 1500 * time.Millisecond, Reason: "HTTP 503"})
	if got := p.describe(); !strings.HasSuffix(got, " · HTTP 503, retrying in 2s") {
		t.Errorf("after a 503: %q", got)
	}
	p.page(idsync.PageEvent{Position: "page 2", Records: 100, Total: contract.Counts{Inserted: 150, Unchanged: 50}, Pages: 2, TotalPgs: 10})
	if got := p.describe(); got != "orders · page 2 · 200 records · 100 rec/s" {
		t.Errorf("the next page clears the retry: %q", got)
	}
	w := p.writer(&buf)
	if _, err := w.Write([]byte("a log line\n")); err != nil {
		t.Fatal(err)
	}
	p.finish()
	out := buf.String()
	for _, want := range []string{"(1/10", "(2/10", "rate limited, retrying in 4s", "a log line\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%q", want, out)
		}
	}
	// The log line starts on a cleared line and the bar is drawn again after it.
	i := strings.Index(out, "a log line\n")
	if before := out[:i]; !strings.HasSuffix(before, "\r") {
		t.Errorf("the bar was not cleared before the log line: %q", out)
	}
	if after := out[i+len("a log line\n"):]; !strings.Contains(after, "orders · page 2") {
		t.Errorf("the bar was not drawn again after the log line: %q", out)
	}
}
