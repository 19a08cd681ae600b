// Package runner runs the resources of a job file with several resources,
// one after another under the job file's lock, in rounds (docs/job-file.md,
// "Order and cycles"): first every selected resource with an unfinished
// run, parents before children (file order puts a parent first), then, in
// file order, the resources the current cycle has not synced, and last
// every child whose parent wrote rows after the child's run began
// (cycle.go). --max-pages and --time-limit count for the whole invocation;
// a child whose parent did not complete waits for the next invocation.
//
// The runner decides what runs and reports what happened; running one
// resource (its engine, fetcher, progress bar and metrics) is the caller's
// RunFunc, so cmd/ wires the engine and tests can pass a fake.
package runner

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
	idsync "github.com/idemsync/idemsync/sync"
)

// Statuses of a resource an invocation did not run (extensions of the run
// object's status).
const (
	StatusNotRun  = "not_run" // the invocation's limit was reached before it
	StatusSkipped = "skipped" // its parent did not complete in this invocation
	// StatusUpToDate: nothing ran, each selected resource completed a run
	// since the open cycle began (also the job's status then).
	StatusUpToDate = "up_to_date"
)

// Hooks are what a caller watches of one run besides its progress bar
// and metrics: its start (a continued run's totals so far) and each
// committed page, as the engine's OnStart and OnPage. Either may be nil;
// the runner passes both to its RunFunc, which must install them.
type Hooks struct {
	Start, Page func(idsync.PageEvent)
}

// RunFunc runs one resource with the options o (its limits already cut to
// what is left of the invocation's) and returns the run's result (RunID 0
// when nothing ran) and the error that ended it.
type RunFunc func(ctx context.Context, r jobfile.Resource, o idsync.Options, h Hooks) (*idsync.Result, error)

// Runner is one invocation of run, resume or replay over a job file with
// several resources. Set the exported fields, then call Run once. The
// caller holds the job file's lock (one per job file: two invocations of
// the same file, whatever resources they select, never overlap).
type Runner struct {
	File        *jobfile.File  // the job file; required
	Store       contract.Store // its state file, opened; required
	Options     idsync.Options // Kind, Resume, Restart, MaxPages, TimeLimit for the whole invocation
	Only        []string       // the resources to sync; every one when empty
	Started     time.Time      // when the invocation started (--time-limit, the cycle's start)
	Log         *slog.Logger   // the runner's own warnings (a cycle that cannot be closed); required
	RunResource RunFunc        // runs one resource; required
	// Code is the exit code of a class of failure, for the results' exit
	// codes: the command line's one mapping (cmd/exitcode.go); required.
	Code func(contract.Class) int

	pages    int64                      // pages committed by the invocation so far
	results  map[string]*ResourceResult // by resource, the latest of its runs
	order    []string                   // resources in the order they were first reported
	ran      map[string]bool            // resources whose engine ran in this invocation
	dirty    map[string]bool            // children whose parent wrote rows after their run began
	cycle    string                     // the name of the open cycle ("" for resume and replay)
	cycleAt  time.Time                  // when it opened
	stopped  string                     // why the invocation runs no more resources ("" while it may)
	selected map[string]bool            // the resources this invocation syncs
	live     live
}

// Run runs the selected resources in their rounds and returns the job's
// result: every selected resource's, the most severe exit code. It closes
// the cycle unless the job ended partial or interrupted. It returns an
// error, and no result, only when the state file cannot say what to run
// (or, for resume, when no resource has an unfinished run: exit 5).
func (m *Runner) Run(ctx context.Context) (*JobResult, error) {
	m.results, m.ran, m.dirty, m.selected = map[string]*ResourceResult{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	selected := m.File.Resources
	if len(m.Only) > 0 {
		selected = nil
		for _, r := range m.File.Resources {
			if slices.Contains(m.Only, r.Name) {
				selected = append(selected, r)
			}
		}
	}
	for _, r := range selected {
		m.selected[r.Name] = true
	}
	if err := m.runAll(ctx, selected); err != nil {
		if ctx.Err() != nil {
			// A signal while the state file was read or written (kept
			// busy by another process): an interruption, exit 130.
			return nil, fmt.Errorf("%w: %v", contract.ErrInterrupted, err)
		}
		return nil, err
	}
	if err := m.notRunNow(context.WithoutCancel(ctx), selected); err != nil { // after a signal too
		return nil, err
	}
	out := m.result()
	m.closeCycle(ctx, out.Status)
	return out, nil
}

// runAll runs the selected resources in their rounds. It returns an error
// only when the state file cannot say which runs are unfinished.
func (m *Runner) runAll(ctx context.Context, selected []jobfile.Resource) error {
	if m.Options.Kind == contract.KindReplay {
		m.runResource(ctx, selected[0], m.Options)
		return nil
	}
	unfinished := map[string]bool{}
	for _, r := range selected {
		run, err := m.Store.Unfinished(ctx, r.Job.Name)
		if err != nil {
			return err
		}
		unfinished[r.Name] = run != nil
		if err := m.checkDirty(ctx, r, run); err != nil {
			return err
		}
	}
	if !m.Options.Resume {
		if err := m.openCycle(ctx, selected); err != nil {
			return err
		}
	}
	// Round one: the unfinished runs, parents before children.
	for _, r := range selected {
		if unfinished[r.Name] {
			o := m.Options
			o.Resume = !o.Restart
			m.runResource(ctx, r, o)
		}
	}
	if m.Options.Resume {
		if !slices.Contains(slices.Collect(maps.Values(unfinished)), true) {
			return contract.Errorf(contract.NothingToResume, "job %s: no resource has an unfinished run to resume", m.File.Name)
		}
		m.notResumed(selected)
		return nil
	}
	// Round two, in file order (parents first): every resource that has
	// not run in this invocation nor begun a completed run since the cycle
	// opened, and every child whose parent wrote rows after the child's
	// run began (its parents were fixed then). A signal during the round
	// cancels ctx; the state file is still read to report the rest (as
	// not run), so the job ends interrupted rather than failing on a
	// cancelled read.
	for _, r := range selected {
		done, err := m.doneInCycle(context.WithoutCancel(ctx), r)
		if err != nil {
			return err
		}
		if !done && (!m.ran[r.Name] || m.replayedOnly(r.Name)) || m.dirty[r.Name] {
			m.runResource(ctx, r, m.Options)
		}
	}
	for _, r := range selected {
		if m.dirty[r.Name] {
			m.runResource(ctx, r, m.Options)
		}
	}
	return nil
}

// replayedOnly reports whether resource name's run in this invocation was
// an unfinished replay it continued to completion: the replay read its
// range only, so the resource has still to complete a run of kind run in
// the cycle (docs/job-file.md, "Running a file with several resources").
func (m *Runner) replayedOnly(name string) bool {
	rr := m.results[name]
	return rr != nil && rr.Kind == contract.KindReplay && rr.Status == contract.RunCompleted
}

// parentOf is the resource name of job's parent ("" when it has none).
func parentOf(job *idsync.Job) string {
	if job.Parent == nil {
		return ""
	}
	return job.Parent.Resource
}

// runResource runs one resource under what is left of the invocation's
// limits, unless an earlier resource stopped the invocation or its parent
// did not complete.
func (m *Runner) runResource(ctx context.Context, r jobfile.Resource, o idsync.Options) {
	rr := &ResourceResult{Resource: r.Name, Result: idsync.Result{Job: m.File.Name, Kind: o.Kind, Status: StatusNotRun}}
	if status, why := m.blocked(ctx, r, &o); why != "" {
		rr.Status, rr.Error = status, why
		if status == contract.RunInterrupted {
			rr.Class, rr.ExitCode = contract.Interrupted, m.Code(contract.Interrupted)
		}
		m.record(rr, false)
		return
	}
	m.live.start(r.Name)
	res, err := m.RunResource(ctx, r, o, Hooks{
		Start: m.live.page,
		Page: func(ev idsync.PageEvent) {
			m.pages++
			m.live.page(ev)
		},
	})
	m.live.start("")
	m.ran[r.Name] = true
	m.wrote(r.Name, r.Job, res)
	class := contract.ClassOf(err)
	res.Job, res.ExitCode = m.File.Name, m.Code(class)
	if err != nil && res.Error == "" {
		res.Error = r.Job.Secrets.Redact(err.Error())
	}
	if res.RunID == 0 && err != nil {
		res.Status = nothingRanStatus(class)
	}
	rr.Result, rr.Err, rr.Class = *res, err, class
	m.record(rr, true)
	switch {
	case class == contract.Interrupted || ctx.Err() != nil:
		m.stopped = "interrupted before this resource; the next run continues"
	case res.Status == contract.RunPartial:
		m.stopped = "the invocation's --max-pages or --time-limit was reached before this resource; the next run continues"
	}
}

// blocked says why r does not run now ("" when it does) and the status it
// is reported with, and cuts o's limits to what is left of the
// invocation's.
func (m *Runner) blocked(ctx context.Context, r jobfile.Resource, o *idsync.Options) (string, string) {
	if m.stopped != "" {
		return StatusNotRun, m.stopped
	}
	if ctx.Err() != nil {
		m.stopped = "interrupted before this resource; the next run continues"
		return contract.RunInterrupted, m.stopped
	}
	if p := parentOf(r.Job); p != "" {
		status := ""
		if pr := m.results[p]; pr != nil {
			status = pr.Status
		} else {
			// Not run in this invocation (not selected, or done in the
			// cycle): an unfinished run of the parent has written back
			// only part of its table, which the child must not walk.
			run, err := m.Store.Unfinished(ctx, r.Job.Parent.Name)
			switch {
			case err != nil:
				return StatusSkipped, fmt.Sprintf("the state of its parent %s cannot be read: %s", p, r.Job.Secrets.Redact(err.Error()))
			case run != nil:
				status = run.Status
			}
		}
		if status != "" && status != contract.RunCompleted {
			return StatusSkipped, fmt.Sprintf("its parent %s did not complete (%s); its children run after the parent completes", p, status)
		}
	}
	if o.MaxPages > 0 {
		if o.MaxPages -= int(m.pages); o.MaxPages <= 0 {
			m.stopped = "the invocation's --max-pages was reached before this resource; the next run continues"
			return StatusNotRun, m.stopped
		}
	}
	if o.TimeLimit > 0 {
		if o.TimeLimit -= time.Since(m.Started); o.TimeLimit <= 0 {
			m.stopped = "the invocation's --time-limit was reached before this resource; the next run continues"
			return StatusNotRun, m.stopped
		}
	}
	return "", ""
}
