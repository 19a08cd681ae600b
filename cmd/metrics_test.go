package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/fakeapi"
)

// readMetrics parses a metrics file with Prometheus's own text parser and
// returns every sample by name and outcome label ("name" or
// "name{outcome}"), checking the job and resource labels on the way.
func readMetrics(t *testing.T, path, job string) map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	out := map[string]float64{}
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			key, labels := name, map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["job"] != job || labels["resource"] != job {
				t.Errorf("%s: labels %v, want job and resource %q", name, labels, job)
			}
			if o := labels["outcome"]; o != "" {
				key += "{" + o + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			default:
				t.Errorf("%s: type %v", name, mf.GetType())
			}
		}
	}
	return out
}

// --metrics-file writes the metrics of docs/operations.md ("Metrics") after
// every run: counters cumulative across runs, a failure moving the last run and
// exit code but not the last success.
func TestMetricsFile(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 120}) // 3 pages of 50
	_, down := startAPI(t, fakeapi.Options{Records: 120, Faults: fakeapi.Faults{Rate: 1, Kinds: []string{fakeapi.Fault503}}})
	dir := t.TempDir()
	prom := filepath.Join(dir, "metrics", "idemsync-orders.prom")
	if err := os.Mkdir(filepath.Dir(prom), 0o755); err != nil {
		t.Fatal(err)
	}
	good := pageJob("orders", url)
	job := writeJob(t, dir, "orders.yaml", good)
	steps := []struct {
		spec  string
		code  int
		check func(m map[string]float64, prev map[string]float64)
	}{
		{good, 0, func(m, _ map[string]float64) {
			want := map[string]float64{"idemsync_pages_total": 3, "idemsync_records_total{inserted}": 120,
				"idemsync_records_total{updated}": 0, "idemsync_records_total{unchanged}": 0,
				"idemsync_records_total{skipped}": 0, "idemsync_records_total{deleted}": 0, "idemsync_last_exit_code": 0}
			for k, v := range want {
				if got, ok := m[k]; !ok || got != v {
					t.Errorf("first run: %s = %v (present %v), want %v", k, got, ok, v)
				}
			}
			if m["idemsync_last_run_timestamp_seconds"] < 1e9 || m["idemsync_last_success_timestamp_seconds"] != m["idemsync_last_run_timestamp_seconds"] {
				t.Errorf("first run: last run %v, last success %v", m["idemsync_last_run_timestamp_seconds"], m["idemsync_last_success_timestamp_seconds"])
			}
			if _, ok := m["idemsync_run_duration_seconds"]; !ok {
				t.Error("no idemsync_run_duration_seconds")
			}
		}},
		{good, 0, func(m, prev map[string]float64) {
			if m["idemsync_pages_total"] != 6 || m["idemsync_records_total{inserted}"] != 120 || m["idemsync_records_total{unchanged}"] != 120 {
				t.Errorf("second run: counters are not cumulative: %v", m)
			}
			if m["idemsync_last_success_timestamp_seconds"] <= prev["idemsync_last_success_timestamp_seconds"] {
				t.Errorf("second run: last success did not move: %v", m)
			}
		}},
		{strings.Replace(good, url, down, 1), 3, func(m, prev map[string]float64) {
			if m["idemsync_last_exit_code"] != 3 || m["idemsync_pages_total"] != 6 {
				t.Errorf("failed run: %v", m)
			}
			if m["idemsync_last_success_timestamp_seconds"] != prev["idemsync_last_success_timestamp_seconds"] ||
				m["idemsync_last_run_timestamp_seconds"] <= prev["idemsync_last_run_timestamp_seconds"] {
				t.Errorf("failed run: last success %v (was %v), last run %v (was %v)",
					m["idemsync_last_success_timestamp_seconds"], prev["idemsync_last_success_timestamp_seconds"],
					m["idemsync_last_run_timestamp_seconds"], prev["idemsync_last_run_timestamp_seconds"])
			}
		}},
	}
	var prev map[string]float64
	for i, st := range steps {
		writeJob(t, dir, "orders.yaml", st.spec)
		r := execute(t, false, "run", job, "--quiet", "--metrics-file", prom)
		if r.code != st.code {
			t.Fatalf("step %d: exit %d, want %d\n%s", i, r.code, st.code, r.stderr)
		}
		m := readMetrics(t, prom, "orders")
		st.check(m, prev)
		prev = m
	}
	entries, err := os.ReadDir(filepath.Dir(prom))
	if err != nil || len(entries) != 1 {
		t.Errorf("the metrics folder holds %v (%v), want the one file", entries, err)
	}
	if fi, err := os.Stat(prom); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("metrics file mode: %v %v", fi, err)
	}
}

// The file's text format is written by hand (metrics_text.go): Prometheus's
// own parser reads it back with every label value as written (quotes,
// backslashes and newlines escaped), each family once with a series per
// resource, and values exact down to the nanosecond's float.
func TestMetricsTextFormat(t *testing.T) {
	hostile := "o\"r\\d\ners"
	ts := []contract.MetricsTotals{
		{Job: hostile, Resource: "r1", LastRun: time.Unix(1700000000, 123456789), Inserted: 12345678901, Pages: 3, LastExitCode: 3},
		{Job: "j", Resource: "r2", Deleted: 2, SweepsSkipped: 1},
	}
	path := filepath.Join(t.TempDir(), "m.prom")
	if err := writeMetricsFile(path, ts...); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if len(fams) != 8 {
		t.Errorf("%d families, want 8", len(fams))
	}
	value := func(name, resource, outcome string) float64 {
		for _, m := range fams[name].GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["resource"] == resource && l["outcome"] == outcome {
				if resource == "r1" && l["job"] != hostile {
					t.Errorf("%s: job label %q, want %q", name, l["job"], hostile)
				}
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
		t.Errorf("%s: no series for resource %q outcome %q", name, resource, outcome)
		return -1
	}
	for _, c := range []struct {
		name, resource, outcome string
		want                    float64
	}{
		{"idemsync_records_total", "r1", "inserted", 12345678901},
		{"idemsync_records_total", "r2", "deleted", 2},
		{"idemsync_pages_total", "r1", "", 3},
		{"idemsync_sweeps_skipped_total", "r2", "", 1},
		{"idemsync_last_exit_code", "r1", "", 3},
		{"idemsync_last_run_timestamp_seconds", "r1", "", 1700000000.123456789},
		{"idemsync_last_run_timestamp_seconds", "r2", "", 0},
	} {
		if got := value(c.name, c.resource, c.outcome); got != c.want {
			t.Errorf("%s{resource=%q,outcome=%q} = %v, want %v", c.name, c.resource, c.outcome, got, c.want)
		}
	}
}
