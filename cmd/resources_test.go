package cmd

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/fakeapi"
	"github.com/idemsync/idemsync/jobfile"
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

// --resource names resources of the file: an unknown name is a usage
// error naming the resources the file has; replay of a file with several
// takes exactly one. (What --resource runs: e2e
// TestResourceFlagRunsOnlyThatOne.)
func TestCheckOnly(t *testing.T) {
	jf := &jobfile.File{Name: "shop", Multi: true, Resources: []jobfile.Resource{{Name: "a"}, {Name: "b"}}}
	for _, tc := range []struct {
		only []string
		kind string
		want string // "" when accepted
	}{
		{nil, contract.KindRun, ""},
		{[]string{"b"}, contract.KindRun, ""},
		{[]string{"b"}, contract.KindReplay, ""},
		{[]string{"nope"}, contract.KindRun, `--resource "nope": job shop has no such resource (it has: a, b)`},
		{nil, contract.KindReplay, "replay of job shop needs exactly one --resource (one of: a, b)"},
		{[]string{"a", "b"}, contract.KindReplay, "exactly one --resource"},
		// Named twice is named once, as for run (e2e TestResourceFlagRunsOnlyThatOne).
		{[]string{"a", "a"}, contract.KindReplay, ""},
	} {
		err := checkOnly(jf, distinct(tc.only), tc.kind)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %v: %v", tc.kind, tc.only, err)
		case tc.want != "" && (err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v: %v, want a usage error with %q", tc.kind, tc.only, err, tc.want)
		}
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
