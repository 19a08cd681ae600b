package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemsync/idemsync/checkpoint"
	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
	idsync "github.com/idemsync/idemsync/sync"
)

// outcome is what one run of a resource does in a fakeRuns: it commits
// pages pages (fewer when the options' MaxPages cuts it short: then it
// ends partial), inserting inserted rows on each, and ends completed, or
// failed with exit code fail.
type outcome struct {
	pages    int
	inserted int64
	fail     contract.Class
}

// call is one resource run the runner asked for.
type call struct {
	resource string
	o        idsync.Options
}

// fakeRuns runs a resource without an engine: it writes its runs, pages
// and counts to the real state file the runner reads, so rounds, cycles
// and dirty children are decided on real state.
type fakeRuns struct {
	t      *testing.T
	store  contract.Store
	script map[string][]outcome // by resource, one per run; then one page, no rows
	calls  []call
	// during, when set, is called after each committed page.
	during func(resource string, page int)
}

func (f *fakeRuns) run(ctx context.Context, r jobfile.Resource, o idsync.Options, h Hooks) (*idsync.Result, error) {
	f.calls = append(f.calls, call{r.Name, o})
	out := outcome{pages: 1}
	if s := f.script[r.Name]; len(s) > 0 {
		out, f.script[r.Name] = s[0], s[1:]
	}
	res := &idsync.Result{Job: r.Job.Name, Kind: o.Kind, Status: contract.RunFailed}
	var id int64
	if o.Resume {
		run, err := f.store.Unfinished(ctx, r.Job.Name)
		if err != nil {
			return res, err
		}
		if run == nil {
			return res, contract.Errorf(contract.NothingToResume, "%s: nothing to resume", r.Job.Name)
		}
		if err := f.store.Reopen(ctx, run.ID); err != nil {
			return res, err
		}
		id, res.Resumed = run.ID, true
	} else {
		var err error
		if id, err = f.store.StartRun(ctx, &contract.RunInfo{Job: r.Job.Name, Kind: o.Kind}); err != nil {
			return res, err
		}
	}
	res.RunID = id
	h.Start(idsync.PageEvent{RunID: id})
	for p := 1; p <= out.pages; p++ {
		if o.MaxPages > 0 && int(res.Pages) == o.MaxPages {
			res.Status = contract.RunPartial
			return res, f.store.FinishRun(ctx, id, contract.RunPartial, "", "")
		}
		c := contract.Counts{Inserted: out.inserted}
		if err := f.store.CommitPage(ctx, r.Job.Name, &contract.PageCommit{RunID: id, Position: fmt.Sprint(p), Next: fmt.Sprint(p + 1), Inserted: c.Inserted}); err != nil {
			return res, err
		}
		res.Pages++
		res.Inserted += out.inserted
		h.Page(idsync.PageEvent{RunID: id, Pages: res.Pages, Counts: c, Total: contract.Counts{Inserted: res.Inserted}})
		if f.during != nil {
			f.during(r.Name, p)
		}
	}
	if out.fail != 0 {
		err := contract.Errorf(out.fail, "%s: the API said no", r.Job.Name)
		res.Error = err.Error()
		if ferr := f.store.FinishRun(ctx, id, contract.RunFailed, res.Error, ""); ferr != nil {
			return res, ferr
		}
		return res, err
	}
	res.Status = contract.RunCompleted
	return res, f.store.FinishRun(ctx, id, contract.RunCompleted, "", "")
}

// names lists the resources of the calls in order, with "+" for a
// continued run.
func (f *fakeRuns) names() []string {
	var out []string
	for _, c := range f.calls {
		n := c.resource
		if c.o.Resume {
			n += "+"
		}
		out = append(out, n)
	}
	return out
}

// shopFile is a job file "shop" with the named resources; a name
// "child<parent" makes child a child of parent.
func shopFile(names ...string) *jobfile.File {
	jf := &jobfile.File{Name: "shop", Multi: true}
	for _, n := range names {
		var parent string
		for i := range n {
			if n[i] == '<' {
				n, parent = n[:i], n[i+1:]
				break
			}
		}
		job := &idsync.Job{Secrets: idsync.NewRedactor()}
		job.Name = "shop" + jobfile.ResourceSep + n
		if parent != "" {
			job.Parent = &idsync.ParentSpec{Resource: parent, Name: "shop" + jobfile.ResourceSep + parent}
		}
		jf.Resources = append(jf.Resources, jobfile.Resource{Name: n, Job: job})
	}
	return jf
}

// openStore opens a state file in t.TempDir() for the test.
func openStore(t *testing.T) contract.Store {
	t.Helper()
	s, err := checkpoint.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newRunner is a runner of jf over store with the fake's runs.
func newRunner(jf *jobfile.File, f *fakeRuns, o idsync.Options, only ...string) *Runner {
	if o.Kind == "" {
		o.Kind = contract.KindRun
	}
	return &Runner{File: jf, Store: f.store, Options: o, Only: only, Started: time.Now(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), RunResource: f.run,
		Code: func(c contract.Class) int { return int(c) }} // the class's own number: the tests check classes, cmd maps them
}

// run runs a new runner and fails the test on an error.
func run(t *testing.T, jf *jobfile.File, f *fakeRuns, o idsync.Options, only ...string) *JobResult {
	t.Helper()
	out, err := newRunner(jf, f, o, only...).Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

// statuses is each resource's status in the result, as "name=status".
func statuses(out *JobResult) []string {
	var s []string
	for _, r := range out.Resources {
		s = append(s, r.Resource+"="+r.Status)
	}
	return s
}
