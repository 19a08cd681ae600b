package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/runner"
	idsync "github.com/idemsync/idemsync/sync"
)

// buffers are IOStreams writing to two buffers.
func buffers() (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, &out, &errOut
}

// A run's result: one line on stdout (continued runs and a skipped sweep
// say so), the error and its hint on stderr, nothing with --quiet unless it
// failed, and with --json one object with every field of the run object.
func TestPrintResult(t *testing.T) {
	done := &idsync.Result{Job: "orders", RunID: 7, Kind: "run", Status: "completed", Pages: 3, Records: 120, Inserted: 100,
		Updated: 15, Unchanged: 5, DurationMS: 1500, Checkpoint: "page 4"}
	failed := &idsync.Result{Job: "orders", RunID: 8, Kind: "run", Status: "failed", Pages: 1, Records: 50, Inserted: 50,
		DurationMS: 20, Checkpoint: "page 2", Error: "fetch page 2: HTTP 404", Resumed: true, Sweep: idsync.SweepSkippedOutcome, SweepSkipped: "a page was skipped"}
	failure := &contract.Error{Class: contract.Permanent, Msg: "fetch page 2: HTTP 404", Hint: "check source.url"}
	for _, tc := range []struct {
		name        string
		g           globalOpts
		res         *idsync.Result
		err         error
		out, errOut string
	}{
		{"completed", globalOpts{}, done, nil,
			"orders: run 7 completed: 3 pages, 120 records (100 inserted, 15 updated, 5 unchanged, 0 skipped) in 1.5s; checkpoint page 4\n", ""},
		{"completed, quiet", globalOpts{quiet: true}, done, nil, "", ""},
		{"failed, continued, sweep skipped", globalOpts{quiet: true}, failed, failure,
			"orders: run 8 (continued) failed: 1 pages, 50 records (50 inserted, 0 updated, 0 unchanged, 0 skipped) in 20ms; checkpoint page 2; sweep: skipped (a page was skipped)\n",
			"error: fetch page 2: HTTP 404\nhint: check source.url\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ios, out, errOut := buffers()
			printResult(ios, &tc.g, tc.res, tc.err)
			if out.String() != tc.out || errOut.String() != tc.errOut {
				t.Errorf("stdout %q\nwant   %q\nstderr %q\nwant   %q", out, tc.out, errOut, tc.errOut)
			}
		})
	}
	ios, out, errOut := buffers()
	printResult(ios, &globalOpts{json: true}, failed, failure)
	var obj map[string]any
	if err := json.Unmarshal(out.Bytes(), &obj); err != nil || strings.Count(out.String(), "\n") != 1 || errOut.Len() != 0 {
		t.Fatalf("--json: %v: stdout %q, stderr %q", err, out, errOut)
	}
	for _, k := range []string{"job", "run_id", "kind", "status", "pages", "records", "inserted", "updated", "unchanged", "skipped", "checkpoint", "hwm", "duration_ms", "error", "exit_code", "resumed"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("--json lacks %q: %s", k, out)
		}
	}
}

// A job file's result: a line per resource (a run's line, or the status
// and reason of one that did not run) and the job's line; --quiet keeps
// only what failed; --json is the job's object with the resources inside.
func TestPrintJob(t *testing.T) {
	job := &runner.JobResult{Job: "shop", Kind: "run", Status: "partial", DurationMS: 2000, Resources: []runner.ResourceResult{
		{Resource: "a", Result: idsync.Result{Job: "shop", RunID: 3, Kind: "run", Status: "partial", Pages: 2, Records: 20, Inserted: 20, DurationMS: 900, Checkpoint: "page 3"}},
		{Resource: "b", Result: idsync.Result{Job: "shop", Kind: "run", Status: runner.StatusNotRun, Error: "the invocation's --max-pages was reached before this resource; the next run continues"}},
	}}
	ios, out, _ := buffers()
	printJob(ios, &globalOpts{}, job)
	want := "shop.a: run 3 partial: 2 pages, 20 records (20 inserted, 0 updated, 0 unchanged, 0 skipped) in 900ms; checkpoint page 3\n" +
		"shop.b: not_run: the invocation's --max-pages was reached before this resource; the next run continues\n" +
		"shop: partial (2 resources, exit 0) in 2s\n"
	if out.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", out, want)
	}
	ios, out, _ = buffers()
	printJob(ios, &globalOpts{quiet: true}, job)
	if out.Len() != 0 {
		t.Errorf("--quiet printed %q", out)
	}

	upToDate := &runner.JobResult{Job: "shop", Kind: "run", Status: runner.StatusUpToDate, Error: "no resource ran", Resources: []runner.ResourceResult{
		{Resource: "a", Result: idsync.Result{Job: "shop", RunID: 3, Status: runner.StatusUpToDate, Error: "not run now: its run 3 completed since the cycle opened"}}}}
	ios, out, _ = buffers()
	printJob(ios, &globalOpts{}, upToDate)
	want = "shop.a: up_to_date: not run now: its run 3 completed since the cycle opened\nshop: up_to_date (1 resources, exit 0) in 0s: no resource ran\n"
	if out.String() != want {
		t.Errorf("up_to_date:\n%s\nwant:\n%s", out, want)
	}

	ios, out, _ = buffers()
	printJob(ios, &globalOpts{json: true}, job)
	var obj struct {
		Job       string `json:"job"`
		Status    string `json:"status"`
		Resources []struct {
			Resource, Job, Status string
		} `json:"resources"`
	}
	if err := json.Unmarshal(out.Bytes(), &obj); err != nil || obj.Job != "shop" || obj.Status != "partial" || len(obj.Resources) != 2 ||
		obj.Resources[1].Resource != "b" || obj.Resources[1].Job != "shop" || obj.Resources[1].Status != runner.StatusNotRun {
		t.Errorf("--json: %v %+v: %s", err, obj, out)
	}
}
