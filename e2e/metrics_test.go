package e2e

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// promSample returns the value of the one sample of prom whose name and
// labels match series (a regular expression), failing when there is none.
func promSample(t *testing.T, prom []byte, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + series + ` (\S+)$`).FindSubmatch(prom)
	if m == nil {
		t.Fatalf("no sample %s in the metrics file:\n%s", series, prom)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The metrics file's counters count every run that committed pages, not
// only the runs started with --metrics-file (docs/operations.md, Metrics):
// they live in the state file and move with each page's commit.
func TestMetricsCountRunsWithoutMetricsFile(t *testing.T) {
	t.Parallel()
	_, url := startAPI(t, fakeapi.Options{Records: 100})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	first := runCode(t, dir, nil, 0, "run", job)
	prom := filepath.Join(dir, "job.prom")
	second := runCode(t, dir, nil, 0, "run", job, "--metrics-file", prom)
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	for series, want := range map[string]int64{
		`idemsync_pages_total\{[^}]*\}`:                           first.Pages + second.Pages,
		`idemsync_records_total\{[^}]*outcome="inserted"[^}]*\}`:  first.Inserted + second.Inserted,
		`idemsync_records_total\{[^}]*outcome="unchanged"[^}]*\}`: first.Unchanged + second.Unchanged,
	} {
		if got := promSample(t, b, series); got != float64(want) {
			t.Errorf("%s = %v, want %d (both runs)", series, got, want)
		}
	}
	if first.Inserted != 100 || second.Unchanged != 100 {
		t.Fatalf("runs: %+v, %+v", first, second)
	}
}

// idemsync_last_success_timestamp_seconds counts the successes of runs
// started without --metrics-file (issue 28): a job whose successes ran
// without it and whose next run fails with it reports the earlier success,
// not 0.
func TestMetricsLastSuccessWithoutMetricsFile(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(fakeapi.Options{Records: 50})
	srv := httptest.NewServer(api)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", strings.Replace(styleJob("page", srv.URL, "sqlite:out.db"), "  attempts: 6\n", "  attempts: 2\n", 1))
	before := time.Now()
	runCode(t, dir, nil, 0, "run", job)
	after := time.Now()
	srv.Close() // the API goes away: the next run fails (exit 3)
	prom := filepath.Join(dir, "job.prom")
	if r := idemsync(t, dir, nil, "run", job, "--metrics-file", prom); r.code != 3 {
		t.Fatalf("run against a closed API: exit %d, want 3: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	got := promSample(t, b, `idemsync_last_success_timestamp_seconds\{[^}]*\}`)
	if got < float64(before.Unix()) || got > float64(after.Unix()+1) {
		t.Errorf("last success %v, want the first run's end, between %d and %d", got, before.Unix(), after.Unix())
	}
	if code := promSample(t, b, `idemsync_last_exit_code\{[^}]*\}`); code != 3 {
		t.Errorf("last exit code %v, want 3", code)
	}
}
