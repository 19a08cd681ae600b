package cmd

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// shopFile is a job file with resources on the fake API: a (page style)
// and b (offset style), sharing defaults; extra is appended to the list.
func shopFile(url, extra string) string {
	return `name: shop
state: state.db
defaults:
  source:
    base_url: ` + url + `
    records: data
  retry: {min_wait: 5ms, max_wait: 20ms}
  target:
    url: sqlite:out.db
    key: [id]
    columns:
      id: {path: id, type: integer}
      email: customer.email
resources:
  - name: a
    source: {path: /page}
    pagination: {style: page, size_param: per_page, size: 10, total_pages: meta.total_pages}
    target: {table: a}
  - name: b
    source: {path: /offset}
    pagination: {style: offset, size_param: limit, size: 10}
    target: {table: b}
` + extra
}

// jobJSON decodes the job result object of a job file with resources.
type jobJSON struct {
	Job       string `json:"job"`
	Status    string `json:"status"`
	ExitCode  int    `json:"exit_code"`
	Error     string `json:"error"`
	Resources []struct {
		Resource string `json:"resource"`
		Job      string `json:"job"`
		RunID    int64  `json:"run_id"`
		Status   string `json:"status"`
		Pages    int64  `json:"pages"`
		Records  int64  `json:"records"`
		Inserted int64  `json:"inserted"`
		ExitCode int    `json:"exit_code"`
		Resumed  bool   `json:"resumed"`
		Error    string `json:"error"`
	} `json:"resources"`
}

func decodeJob(t *testing.T, r result) jobJSON {
	t.Helper()
	var j jobJSON
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return j
}

// A job file with two resources runs both, in file order, and --json is
// the job's object with one run object per resource.
func TestResourcesRunAll(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 45})
	job := writeJob(t, t.TempDir(), "shop.yaml", shopFile(url, ""))
	r := execute(t, false, "run", job, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	j := decodeJob(t, r)
	if j.Job != "shop" || j.Status != "completed" || j.ExitCode != 0 || len(j.Resources) != 2 {
		t.Fatalf("job result %+v", j)
	}
	for i, want := range []string{"a", "b"} {
		rr := j.Resources[i]
		if rr.Resource != want || rr.Job != "shop" || rr.Status != "completed" || rr.Records != 45 || rr.Inserted != 45 || rr.RunID == 0 {
			t.Errorf("resource %d: %+v, want %s completed with 45 records inserted", i, rr, want)
		}
	}
	// Text output: a line per resource and the job's line.
	r = execute(t, false, "run", job)
	if r.code != 0 || !strings.Contains(r.stdout, "shop.a: run") || !strings.Contains(r.stdout, "shop.b: run") ||
		!strings.Contains(r.stdout, "shop: completed (2 resources, exit 0)") {
		t.Errorf("text output (exit %d):\n%s", r.code, r.stdout)
	}
}

// --resource runs only the named resources; an unknown name is a usage
// error naming the resources the file has.
func TestResourcesOnly(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 25})
	job := writeJob(t, t.TempDir(), "shop.yaml", shopFile(url, ""))
	j := decodeJob(t, execute(t, false, "run", job, "--resource", "b", "--json"))
	if len(j.Resources) != 1 || j.Resources[0].Resource != "b" || j.Status != "completed" {
		t.Fatalf("--resource b ran %+v", j)
	}
	r := execute(t, false, "run", job, "--resource", "nope")
	if r.code != 2 || !strings.Contains(r.stderr, `"nope"`) || !strings.Contains(r.stderr, "a, b") {
		t.Errorf("unknown resource: exit %d, %s", r.code, r.stderr)
	}
	r = execute(t, false, "replay", job, "--from", "1")
	if r.code != 2 || !strings.Contains(r.stderr, "exactly one --resource") {
		t.Errorf("replay without --resource: exit %d, %s", r.code, r.stderr)
	}
}

// --max-pages counts for the whole invocation: the first resource stops
// partial, the second does not start; the next run continues the first
// (resumed) and then runs the second; adding a resource to the file does
// not disturb the others' checkpoints.
func TestResourcesMaxPagesAcrossResources(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 45})
	dir := t.TempDir()
	job := writeJob(t, dir, "shop.yaml", shopFile(url, ""))
	j := decodeJob(t, execute(t, false, "run", job, "--max-pages", "3", "--json"))
	if j.Status != "partial" || j.ExitCode != 0 || len(j.Resources) != 2 ||
		j.Resources[0].Status != "partial" || j.Resources[0].Pages != 3 || j.Resources[1].Status != "not_run" {
		t.Fatalf("after --max-pages 3: %+v", j)
	}
	// A third resource appears in the file: a still continues its run.
	writeJob(t, dir, "shop.yaml", shopFile(url, `  - name: c
    source: {path: /page}
    pagination: {style: page, size_param: per_page, size: 10}
    target: {table: c}
`))
	j = decodeJob(t, execute(t, false, "run", job, "--json"))
	if j.Status != "completed" || len(j.Resources) != 3 {
		t.Fatalf("second run: %+v", j)
	}
	a := j.Resources[0]
	if a.Resource != "a" || !a.Resumed || a.Records != 45 || a.Inserted != 45 {
		t.Errorf("a after the limit: %+v, want resumed with 45 records in all", a)
	}
	for _, rr := range j.Resources[1:] {
		if rr.Status != "completed" || rr.Records != 45 || rr.Resumed {
			t.Errorf("%s: %+v", rr.Resource, rr)
		}
	}
}

// The job's exit code is the most severe of its resources': one resource
// failing permanently (a 404) makes the job exit 1 while the other
// completes.
func TestResourcesMostSevereExit(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 15})
	job := writeJob(t, t.TempDir(), "shop.yaml", shopFile(url, `  - name: missing
    source: {path: /no-such-route}
    pagination: {style: page, size_param: per_page, size: 10}
    target: {table: missing}
`))
	r := execute(t, false, "run", job, "--json")
	j := decodeJob(t, r)
	if r.code != 1 || j.ExitCode != 1 || j.Status != "failed" {
		t.Fatalf("exit %d, job %+v", r.code, j)
	}
	if j.Resources[0].Status != "completed" || j.Resources[1].Status != "completed" || j.Resources[2].ExitCode != 1 ||
		!strings.Contains(j.Error, "missing") {
		t.Errorf("resources %+v, error %q", j.Resources, j.Error)
	}
}

// Metrics of a job with resources: one file with a series per resource,
// labelled with the job's and the resource's name.
func TestResourcesMetricsFile(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 15})
	dir := t.TempDir()
	job := writeJob(t, dir, "shop.yaml", shopFile(url, ""))
	path := dir + "/m.prom"
	if r := execute(t, false, "run", job, "--metrics-file", path); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Only b runs now; a keeps its series, and no series is written twice.
	if r := execute(t, false, "run", job, "--resource", "b", "--metrics-file", path); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, series := range []string{`idemsync_last_exit_code{job="shop",resource="a"}`, `idemsync_last_exit_code{job="shop",resource="b"}`} {
		if n := strings.Count(string(b), series); n != 1 {
			t.Errorf("%s %d times in the metrics file, want once:\n%s", series, n, b)
		}
	}
	for _, want := range []string{
		`idemsync_records_total{job="shop",resource="a",outcome="inserted"} 15`,
		`idemsync_records_total{job="shop",resource="b",outcome="inserted"} 15`,
		`idemsync_last_exit_code{job="shop",resource="b"} 0`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s:\n%s", want, b)
		}
	}
}

// status of a job file with resources: a row per resource in the table,
// an entry per resource in --json with the job's name and the resource's;
// status without a job file splits the names too.
func TestResourcesStatus(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 25})
	dir := t.TempDir()
	job := writeJob(t, dir, "shop.yaml", shopFile(url, ""))
	r := execute(t, false, "status", job, "--json")
	var st struct {
		Jobs []struct{ Name, Resource, Status string } `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st.Jobs) != 2 || st.Jobs[0].Status != "never_run" ||
		st.Jobs[0].Name != "shop" || st.Jobs[1].Resource != "b" {
		t.Fatalf("status before any run: %v %s", err, r.stdout)
	}
	if r := execute(t, false, "run", job, "--resource", "a"); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	r = execute(t, false, "status", job)
	if r.code != 0 || !strings.Contains(r.stdout, "RESOURCE") || !regexpLine(r.stdout, `^a\s+completed`) || !regexpLine(r.stdout, `^b\s+never_run`) {
		t.Errorf("status table:\n%s", r.stdout)
	}
	r = execute(t, false, "status", "--state", dir+"/state.db", "--json")
	st.Jobs = nil
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st.Jobs) != 1 || st.Jobs[0].Name != "shop" || st.Jobs[0].Resource != "a" {
		t.Errorf("status of the state file: %v %s", err, r.stdout)
	}
}

// show, validate and prune know resources: show --resource prints one
// resource's rows, without it every resource's; validate checks every
// resource; prune JOB forgets a resource removed from the file.
func TestResourcesShowValidatePrune(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 12})
	dir := t.TempDir()
	extra := `  - name: c
    source: {path: /page}
    pagination: {style: page, size_param: per_page, size: 10}
    target: {table: c}
`
	job := writeJob(t, dir, "shop.yaml", shopFile(url, extra))
	if r := execute(t, false, "validate", job); r.code != 0 || !strings.Contains(r.stdout, "shop: valid (3 resources)") {
		t.Fatalf("validate: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := execute(t, false, "run", job); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	r := execute(t, false, "show", job, "--resource", "b", "--json", "--limit", "3")
	var one struct {
		Job, Resource, Table string
		Rows                 []map[string]*string
	}
	if err := json.Unmarshal([]byte(r.stdout), &one); err != nil || one.Job != "shop" || one.Resource != "b" || one.Table != "b" || len(one.Rows) != 3 {
		t.Errorf("show --resource b: %v %s", err, r.stdout)
	}
	r = execute(t, false, "show", job)
	if r.code != 0 || !strings.Contains(r.stdout, "a (table a)") || !strings.Contains(r.stdout, "c (table c)") {
		t.Errorf("show of every resource:\n%s", r.stdout)
	}
	// c leaves the file: its state stays until prune, which forgets it.
	writeJob(t, dir, "shop.yaml", shopFile(url, ""))
	r = execute(t, false, "status", "--state", dir+"/state.db")
	if !regexpLine(r.stdout, `^resource\s+c$`) {
		t.Errorf("removed resource's state gone before prune:\n%s", r.stdout)
	}
	if r := execute(t, false, "prune", job); r.code != 0 {
		t.Fatalf("prune: %s", r.stderr)
	}
	r = execute(t, false, "status", "--state", dir+"/state.db", "--json")
	if strings.Contains(r.stdout, `"resource":"c"`) || !strings.Contains(r.stdout, `"resource":"a"`) {
		t.Errorf("after prune: %s", r.stdout)
	}
}

// regexpLine reports whether some line of s matches pattern.
func regexpLine(s, pattern string) bool {
	re := regexp.MustCompile(pattern)
	for _, l := range strings.Split(s, "\n") {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// validate --connect of a child resource checks its database only: its
// requests need a parent row, so none is sent with {parent.id} in it.
func TestResourcesValidateConnectChild(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 5})
	job := writeJob(t, t.TempDir(), "shop.yaml", shopFile(url, `  - name: kids
    parent: a
    source: {path: "/page/{parent.id}/kids"}
    pagination: {style: page, size_param: per_page, size: 10}
    target:
      table: kids
      key: [a_id, id]
      columns: {a_id: {parent: id}, id: {path: id, type: integer}}
`))
	r := execute(t, false, "validate", job, "--connect")
	if r.code != 0 || !strings.Contains(r.stdout, "reachable") {
		t.Fatalf("validate --connect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := api.Requests("/page/{parent.id}/kids") + api.Requests("/page/%7Bparent.id%7D/kids"); n != 0 {
		t.Errorf("%d requests with the placeholder unfilled", n)
	}
	if api.Requests("/page") == 0 {
		t.Error("the parent's API was not reached")
	}
}

// A cycle cut short stays open: the next run syncs only the resources the
// cycle has not, and --restart starts every resource over.
func TestResourcesCycle(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 15})
	job := writeJob(t, t.TempDir(), "shop.yaml", shopFile(url, ""))
	// a takes 2 pages; the third is b's first.
	j := decodeJob(t, execute(t, false, "run", job, "--max-pages", "3", "--json"))
	if j.Status != "partial" || j.Resources[0].Status != "completed" || j.Resources[1].Status != "partial" {
		t.Fatalf("first invocation: %+v", j)
	}
	first := j.Resources[0].RunID
	j = decodeJob(t, execute(t, false, "run", job, "--json"))
	if j.Status != "completed" || len(j.Resources) != 2 || j.Resources[0].RunID != first || !j.Resources[1].Resumed {
		t.Fatalf("the rest of the cycle (a reported with its run of the cycle, not run again; b continued): %+v", j)
	}
	// The cycle closed: the next run syncs both.
	j = decodeJob(t, execute(t, false, "run", job, "--json"))
	if j.Status != "completed" || len(j.Resources) != 2 {
		t.Fatalf("a new cycle: %+v", j)
	}
	decodeJob(t, execute(t, false, "run", job, "--max-pages", "3", "--json"))
	j = decodeJob(t, execute(t, false, "run", job, "--restart", "--json"))
	if j.Status != "completed" || len(j.Resources) != 2 || j.Resources[0].Resumed || j.Resources[1].Resumed {
		t.Fatalf("--restart: %+v", j)
	}
}
