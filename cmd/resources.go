package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/idemsync/idemsync/checkpoint"
	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
	idsync "github.com/idemsync/idemsync/sync"
)

// A job file with several resources (SPEC §8) runs them one after another
// under one lock, the job file's: first every selected resource with an
// unfinished run, parents before children (file order puts a parent
// first), then, in file order, the resources the current cycle has not
// synced, and last every child whose parent wrote rows after the child's
// run began (resources_cycle.go). --max-pages and --time-limit count for
// the whole invocation; a child whose parent did not complete waits for
// the next invocation.

// Statuses of a resource an invocation did not run (extensions of the run
// object's status).
const (
	statusNotRun  = "not_run" // the invocation's limit was reached before it
	statusSkipped = "skipped" // its parent did not complete in this invocation
	// statusUpToDate: nothing ran, each selected resource completed a run
	// since the open cycle began (also the job's status then).
	statusUpToDate = "up_to_date"
)

// multiRun is one invocation of run, resume or replay over a job file with
// several resources.
type multiRun struct {
	g        *globalOpts
	ios      *IOStreams
	jf       *jobfile.File
	store    *checkpoint.Store
	opts     idsync.Options
	started  time.Time
	metrics  string
	log      *slog.Logger
	pages    int64                               // pages committed by the invocation so far
	results  map[string]*resourceResult          // by resource, the latest of its runs
	order    []string                            // resources in the order they were first reported
	ran      map[string]bool                     // resources whose engine ran in this invocation
	dirty    map[string]bool                     // children whose parent wrote rows after their run began
	cycle    string                              // the name of the open cycle ("" for resume and replay)
	cycleAt  time.Time                           // when it opened
	stopped  string                              // why the invocation runs no more resources ("" while it may)
	selected map[string]bool                     // the resources this invocation syncs
	totals   map[string]checkpoint.MetricsTotals // each resource's metrics after its last run
	hardExit hardExitState
}

// runResources runs the selected resources of jf (every one when only is
// empty) and prints the job's result.
func runResources(ctx context.Context, g *globalOpts, ios *IOStreams, jf *jobfile.File, opts idsync.Options, metricsFile string, only []string, started time.Time) error {
	red := idsync.NewRedactor()
	for _, r := range jf.Resources {
		red.Merge(r.Job.Secrets)
	}
	for _, r := range jf.Resources { // every output of the job redacts every resource's secrets
		r.Job.Secrets.Merge(red)
	}
	skeleton := &jobResult{Job: jf.Name, Kind: opts.Kind, Status: idsync.RunFailed, Resources: []resourceResult{}}
	log, err := newLogger(ios.ErrOut, g.logFormat, g.logLevel, g.quiet, red, jf.Name)
	if err != nil {
		return failedJob(ios, g, skeleton, contract.Errorf(contract.Invalid, "%w", err), red, started)
	}
	store, err := checkpoint.Open(ctx, g.statePath(jf.Resources[0].Job), log)
	if err != nil {
		return failedJob(ios, g, skeleton, err, red, started)
	}
	defer store.Close()
	// One lock per job file: two invocations of the same file, whatever
	// resources they select, never overlap.
	unlock, err := store.Lock(ctx, jf.Name)
	if err != nil {
		return failedJob(ios, g, skeleton, err, red, started)
	}
	defer unlock()
	m := &multiRun{g: g, ios: ios, jf: jf, store: store, opts: opts, started: started, metrics: metricsFile, log: log,
		results: map[string]*resourceResult{}, ran: map[string]bool{}, dirty: map[string]bool{},
		selected: map[string]bool{}, totals: map[string]checkpoint.MetricsTotals{}}
	if g.json {
		gate := &jsonGate{}
		g.gate = gate
		defer m.armHardExit(gate, red)()
	}
	selected := jf.Resources
	if len(only) > 0 {
		selected = nil
		for _, r := range jf.Resources {
			if slices.Contains(only, r.Name) {
				selected = append(selected, r)
			}
		}
	}
	for _, r := range selected {
		m.selected[r.Name] = true
	}
	if err := m.runAll(ctx, selected); err != nil {
		return failedJob(ios, g, skeleton, err, red, started)
	}
	if err := m.notRunNow(ctx, selected); err != nil {
		return failedJob(ios, g, skeleton, err, red, started)
	}
	m.writeMetrics(ctx)
	out := m.result()
	m.closeCycle(ctx, out.Status)
	m.print(out)
	if out.ExitCode != 0 {
		return &reportedError{code: out.ExitCode}
	}
	return nil
}

// runAll runs the selected resources in their rounds. It returns an error
// only when the state file cannot say which runs are unfinished.
func (m *multiRun) runAll(ctx context.Context, selected []jobfile.Resource) error {
	if m.opts.Kind == idsync.KindReplay {
		m.runResource(ctx, selected[0], m.opts)
		return nil
	}
	unfinished := map[string]bool{}
	for _, r := range selected {
		run, err := m.store.Unfinished(ctx, r.Job.Name)
		if err != nil {
			return err
		}
		unfinished[r.Name] = run != nil
		if err := m.checkDirty(ctx, r, run); err != nil {
			return err
		}
	}
	if !m.opts.Resume {
		if err := m.openCycle(ctx, selected); err != nil {
			return err
		}
	}
	// Round one: the unfinished runs, parents before children.
	for _, r := range selected {
		if unfinished[r.Name] {
			o := m.opts
			o.Resume = !o.Restart
			m.runResource(ctx, r, o)
		}
	}
	if m.opts.Resume {
		if !slices.Contains(slices.Collect(maps.Values(unfinished)), true) {
			return contract.Errorf(contract.NothingToResume, "job %s: no resource has an unfinished run to resume", m.jf.Name)
		}
		m.notResumed(selected)
		return nil
	}
	// Round two, in file order (parents first): every resource that has
	// not run in this invocation nor begun a completed run since the cycle
	// opened, and every child whose parent wrote rows after the child's
	// run began (its parents were fixed then).
	for _, r := range selected {
		done, err := m.doneInCycle(ctx, r)
		if err != nil {
			return err
		}
		if !done && !m.ran[r.Name] || m.dirty[r.Name] {
			m.runResource(ctx, r, m.opts)
		}
	}
	for _, r := range selected {
		if m.dirty[r.Name] {
			m.runResource(ctx, r, m.opts)
		}
	}
	return nil
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
func (m *multiRun) runResource(ctx context.Context, r jobfile.Resource, o idsync.Options) {
	rr := &resourceResult{Resource: r.Name, Result: idsync.Result{Job: m.jf.Name, Kind: o.Kind, Status: statusNotRun}}
	if status, why := m.blocked(ctx, r, &o); why != "" {
		rr.Status, rr.Error = status, why
		if status == idsync.RunInterrupted {
			rr.ExitCode = exitInterrupted
		}
		m.record(rr, false)
		return
	}
	m.hardExit.start(r.Name)
	metrics := newResourceMetrics(m.metrics, m.store, m.jf.Name, r.Name, time.Now(), m.log)
	metrics.noFile = true
	res, err := runOne(ctx, m.g, m.ios, m.store, r.Job, o, metrics, runHooks{
		start: m.hardExit.page,
		page: func(ev idsync.PageEvent) {
			m.pages++
			m.hardExit.page(ev)
		},
	})
	m.hardExit.start("")
	if metrics.totals.Job != "" {
		m.totals[r.Name] = metrics.totals
	}
	m.ran[r.Name] = true
	m.wrote(r.Name, r.Job, res)
	code := exitCode(err)
	res.Job, res.ExitCode = m.jf.Name, code
	if err != nil && res.Error == "" {
		res.Error = r.Job.Secrets.Redact(err.Error())
	}
	if res.RunID == 0 && err != nil {
		res.Status = nothingRanStatus(code)
	}
	rr.Result, rr.err = *res, err
	m.record(rr, true)
	switch {
	case code == exitInterrupted || ctx.Err() != nil:
		m.stopped = "interrupted before this resource; the next run continues"
	case res.Status == idsync.RunPartial:
		m.stopped = "the invocation's --max-pages or --time-limit was reached before this resource; the next run continues"
	}
}

// blocked says why r does not run now ("" when it does) and the status it
// is reported with, and cuts o's limits to what is left of the
// invocation's.
func (m *multiRun) blocked(ctx context.Context, r jobfile.Resource, o *idsync.Options) (string, string) {
	if m.stopped != "" {
		return statusNotRun, m.stopped
	}
	if ctx.Err() != nil {
		m.stopped = "interrupted before this resource; the next run continues"
		return idsync.RunInterrupted, m.stopped
	}
	if p := parentOf(r.Job); p != "" {
		status := ""
		if pr := m.results[p]; pr != nil {
			status = pr.Status
		} else {
			// Not run in this invocation (not selected, or done in the
			// cycle): an unfinished run of the parent has written back
			// only part of its table, which the child must not walk.
			run, err := m.store.Unfinished(ctx, r.Job.Parent.Name)
			switch {
			case err != nil:
				return statusSkipped, fmt.Sprintf("the state of its parent %s cannot be read: %s", p, r.Job.Secrets.Redact(err.Error()))
			case run != nil:
				status = run.Status
			}
		}
		if status != "" && status != idsync.RunCompleted {
			return statusSkipped, fmt.Sprintf("its parent %s did not complete (%s); its children run after the parent completes", p, status)
		}
	}
	if o.MaxPages > 0 {
		if o.MaxPages -= int(m.pages); o.MaxPages <= 0 {
			m.stopped = "the invocation's --max-pages was reached before this resource; the next run continues"
			return statusNotRun, m.stopped
		}
	}
	if o.TimeLimit > 0 {
		if o.TimeLimit -= time.Since(m.started); o.TimeLimit <= 0 {
			m.stopped = "the invocation's --time-limit was reached before this resource; the next run continues"
			return statusNotRun, m.stopped
		}
	}
	return "", ""
}
