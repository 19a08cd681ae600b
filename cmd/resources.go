package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/idemsync/idemsync/checkpoint"
	"github.com/idemsync/idemsync/jobfile"
	idsync "github.com/idemsync/idemsync/sync"
)

// A job file with several resources (SPEC §8) runs them one after another
// under one lock, the job file's: first every selected resource with an
// unfinished run, parents before children (file order puts a parent
// first), then the others in file order, and again every child whose
// parent ran in that second round. --max-pages and --time-limit count for
// the whole invocation; a resource that fails, is refused or is
// interrupted leaves its children for the next invocation.

// Statuses of a resource an invocation did not run (extensions of the run
// object's status).
const (
	statusNotRun  = "not_run" // the invocation's limit was reached before it
	statusSkipped = "skipped" // its parent did not complete in this invocation
)

// jobResult is the --json object of run/resume/replay for a job file with
// several resources (SPEC §8).
type jobResult struct {
	Job        string           `json:"job"`
	Kind       string           `json:"kind"`
	Status     string           `json:"status"`
	ExitCode   int              `json:"exit_code"`
	DurationMS int64            `json:"duration_ms"`
	Error      string           `json:"error"`
	Resources  []resourceResult `json:"resources"`
}

// resourceResult is one resource's v1 run object, plus its name.
type resourceResult struct {
	Resource string `json:"resource"`
	idsync.Result
}

// checkOnly checks the --resource names against the file: each names one
// of its resources; replay of a file with several takes exactly one.
func checkOnly(jf *jobfile.File, only []string, kind string) error {
	for _, n := range only {
		if jf.Resource(n) == nil {
			return &usageError{err: fmt.Errorf("--resource %q: job %s has no such resource (it has: %s)", n, jf.Name, strings.Join(jf.Names(), ", "))}
		}
	}
	if kind == idsync.KindReplay && jf.Multi && len(only) != 1 {
		return &usageError{err: fmt.Errorf("replay of job %s needs exactly one --resource (one of: %s)", jf.Name, strings.Join(jf.Names(), ", "))}
	}
	return nil
}

// severity orders exit codes for a job's result: the most severe of its
// resources' wins (2 > 1 > 3 > 130 > 0; 4 and 5 between 3 and 130).
func severity(code int) int {
	switch code {
	case idsync.ExitUsage:
		return 6
	case idsync.ExitPermanent:
		return 5
	case idsync.ExitTransient:
		return 4
	case idsync.ExitLocked:
		return 3
	case idsync.ExitNothing:
		return 2
	case idsync.ExitInterrupted:
		return 1
	}
	if code != 0 {
		return 5
	}
	return 0
}

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
	pages    int64                      // pages committed by the invocation so far
	results  map[string]*resourceResult // by resource, the latest of its runs
	order    []string                   // resources in the order they were first reported
	ran      map[string]bool            // resources whose engine ran in this invocation
	dirty    map[string]bool            // children whose parent wrote rows after their run began
	cycle    string                     // the name of the open cycle ("" for resume and replay)
	cycleAt  time.Time                  // when it opened
	stopped  string                     // why the invocation runs no more resources ("" while it may)
	totals   []checkpoint.MetricsTotals // each resource's metrics after its run
	hardExit hardExitState
}

// runResources runs the selected resources of jf (every one when only is
// empty) and prints the job's result.
func runResources(ctx context.Context, g *globalOpts, ios *IOStreams, jf *jobfile.File, opts idsync.Options, metricsFile string, only []string, started time.Time) error {
	red := idsync.NewRedactor()
	for _, r := range jf.Resources {
		red.Merge(r.Job.Secrets)
	}
	skeleton := &jobResult{Job: jf.Name, Kind: opts.Kind, Status: idsync.RunFailed, Resources: []resourceResult{}}
	log, err := newLogger(ios.ErrOut, g.logFormat, g.logLevel, g.quiet, red, jf.Name)
	if err != nil {
		return failedJob(ios, g, skeleton, idsync.Errorf(idsync.ExitUsage, "%w", err), red, started)
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
		results: map[string]*resourceResult{}, ran: map[string]bool{}, dirty: map[string]bool{}}
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
	if err := m.runAll(ctx, selected); err != nil {
		return failedJob(ios, g, skeleton, err, red, started)
	}
	if metricsFile != "" && len(m.totals) > 0 {
		if err := writeMetricsFile(metricsFile, m.totals...); err != nil {
			log.Warn("metrics file not written", "path", metricsFile, "err", err)
		}
	}
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
		if run != nil && r.Job.Parent != nil {
			if m.dirty[r.Name], err = m.parentWroteSince(ctx, r.Job.Parent.Name, run.StartedAt); err != nil {
				return err
			}
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
		if len(m.ran) == 0 {
			return idsync.Errorf(idsync.ExitNothing, "job %s: no resource has an unfinished run to resume", m.jf.Name)
		}
		m.notResumed(selected)
		return nil
	}
	// Round two, in file order (parents first): every resource that has
	// not begun a completed run since the cycle opened, and every child
	// whose parent wrote rows after the child's run began (its parents
	// were fixed then).
	for _, r := range selected {
		done, err := m.doneInCycle(ctx, r)
		if err != nil {
			return err
		}
		if !done || m.dirty[r.Name] {
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

// A cycle is one sync of every selected resource. It opens when an
// invocation finds none open, and stays open while invocations are cut
// short (--max-pages, --time-limit, a signal, SIGKILL): the next one syncs
// only the resources that have not begun a completed run since it opened,
// as a run cut short continues where it stopped. An invocation that ends
// completed or failed closes it, so the next one syncs every resource
// again and a resource that keeps failing holds up no other.

// cycleName keys the cycle of the selected resources in the state file:
// the job's name, and the selection when --resource narrowed it.
func (m *multiRun) cycleName(selected []jobfile.Resource) string {
	if len(selected) == len(m.jf.Resources) {
		return m.jf.Name
	}
	names := make([]string, len(selected))
	for i, r := range selected {
		names[i] = r.Name
	}
	return m.jf.Name + "|" + strings.Join(names, ",")
}

// openCycle reads the open cycle, or opens one now (always with --restart).
func (m *multiRun) openCycle(ctx context.Context, selected []jobfile.Resource) error {
	m.cycle = m.cycleName(selected)
	at, open, err := m.store.Cycle(ctx, m.cycle)
	if err != nil {
		return err
	}
	if !open || m.opts.Restart { // --restart starts every resource over
		at = m.started
		if err := m.store.OpenCycle(ctx, m.cycle, at); err != nil {
			return err
		}
	}
	m.cycleAt = at
	return nil
}

// closeCycle closes the open cycle unless the job ended partial or
// interrupted. A failure to write it is a warning: the next invocation
// then syncs only what this cycle has not.
func (m *multiRun) closeCycle(ctx context.Context, status string) {
	if m.cycle == "" || status == idsync.RunPartial || status == idsync.RunInterrupted {
		return
	}
	if err := m.store.CloseCycle(context.WithoutCancel(ctx), m.cycle); err != nil {
		m.log.Warn("the cycle of the resources stays open", "err", err)
	}
}

// doneInCycle reports whether r's last completed run of kind run began
// since the cycle opened.
func (m *multiRun) doneInCycle(ctx context.Context, r jobfile.Resource) (bool, error) {
	runs, err := m.store.Runs(ctx, r.Job.Name, 0)
	if err != nil {
		return false, err
	}
	for _, run := range runs {
		if run.Kind == idsync.KindRun && run.Status == idsync.RunCompleted {
			return !run.StartedAt.Before(m.cycleAt), nil
		}
	}
	return false, nil
}

// notResumed lists, after resume, every selected resource it did not
// continue as not run: resume finishes what was started and syncs nothing
// else, so the job is partial, not completed, unless every selected
// resource had a run to finish; run syncs the rest.
func (m *multiRun) notResumed(selected []jobfile.Resource) {
	for _, r := range selected {
		if !m.ran[r.Name] {
			m.record(&resourceResult{Resource: r.Name, Result: idsync.Result{Job: m.jf.Name, Kind: m.opts.Kind, Status: statusNotRun,
				Error: "not continued: resume continues unfinished runs only; run syncs this resource"}}, false)
		}
	}
}

// parentWroteSince reports whether a run of the parent (state name
// parent) that began after since inserted or updated rows: a child run
// continued from before it does not know those rows.
func (m *multiRun) parentWroteSince(ctx context.Context, parent string, since time.Time) (bool, error) {
	runs, err := m.store.Runs(ctx, parent, 0)
	if err != nil {
		return false, err
	}
	for _, r := range runs {
		if r.StartedAt.After(since) && r.Inserted+r.Updated > 0 {
			return true, nil
		}
	}
	return false, nil
}

// wrote notes that resource name's run res ended: a child whose run began
// before its parent wrote rows must run again; a child's new run (not a
// continued one) took its parent list now.
func (m *multiRun) wrote(name string, job *idsync.Job, res *idsync.Result) {
	if job.Parent != nil && res.RunID != 0 && !res.Resumed {
		m.dirty[name] = false
	}
	if res.Inserted+res.Updated == 0 {
		return
	}
	for _, r := range m.jf.Resources {
		if parentOf(r.Job) == name {
			m.dirty[r.Name] = true
		}
	}
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
	if why := m.blocked(ctx, r, &o); why != "" {
		rr.Error = why
		m.record(rr, false)
		return
	}
	m.hardExit.start(r.Name)
	metrics := newResourceMetrics(m.metrics, m.store, m.jf.Name, r.Name, time.Now(), m.log)
	if metrics != nil {
		metrics.noFile = true
	}
	res, err := runOne(ctx, m.g, m.ios, m.store, r.Job, o, metrics, runHooks{
		start: m.hardExit.page,
		page: func(ev idsync.PageEvent) {
			m.pages++
			m.hardExit.page(ev)
		},
	})
	m.hardExit.start("")
	if metrics != nil && metrics.totals.Job != "" {
		m.totals = append(m.totals, metrics.totals)
	}
	m.ran[r.Name] = true
	m.wrote(r.Name, r.Job, res)
	code := idsync.ExitCode(err)
	res.Job, res.ExitCode = m.jf.Name, code
	if err != nil && res.Error == "" {
		res.Error = r.Job.Secrets.Redact(err.Error())
	}
	if res.RunID == 0 && err != nil {
		res.Status = nothingRanStatus(code)
	}
	rr.Result = *res
	m.record(rr, true)
	switch {
	case code == idsync.ExitInterrupted || ctx.Err() != nil:
		m.stopped = "interrupted before this resource; the next run continues"
	case res.Status == idsync.RunPartial:
		m.stopped = "the invocation's --max-pages or --time-limit was reached before this resource; the next run continues"
	}
}

// blocked says why r does not run now ("" when it does), and cuts o's
// limits to what is left of the invocation's.
func (m *multiRun) blocked(ctx context.Context, r jobfile.Resource, o *idsync.Options) string {
	if m.stopped != "" {
		return m.stopped
	}
	if ctx.Err() != nil {
		m.stopped = "interrupted before this resource; the next run continues"
		return m.stopped
	}
	if p := parentOf(r.Job); p != "" {
		if pr := m.results[p]; pr != nil && pr.Status != idsync.RunCompleted {
			return fmt.Sprintf("its parent %s did not complete (%s); its children run after the parent completes", p, pr.Status)
		}
	}
	if o.MaxPages > 0 {
		if o.MaxPages -= int(m.pages); o.MaxPages <= 0 {
			m.stopped = "the invocation's --max-pages was reached before this resource; the next run continues"
			return m.stopped
		}
	}
	if o.TimeLimit > 0 {
		if o.TimeLimit -= time.Since(m.started); o.TimeLimit <= 0 {
			m.stopped = "the invocation's --time-limit was reached before this resource; the next run continues"
			return m.stopped
		}
	}
	return ""
}

// nothingRanStatus is the status of a resource whose run never started.
func nothingRanStatus(code int) string {
	switch code {
	case idsync.ExitNothing:
		return "nothing_to_resume"
	case idsync.ExitLocked:
		return "locked"
	}
	return idsync.RunFailed
}

// record keeps rr as its resource's result. A resource run twice in one
// invocation (a child continued, then run again after its parent) reports
// its last run, with the counts of both.
func (m *multiRun) record(rr *resourceResult, ran bool) {
	old, seen := m.results[rr.Resource]
	if !seen {
		m.order = append(m.order, rr.Resource)
	}
	if seen && old.RunID != 0 {
		if !ran {
			return // the earlier run stands
		}
		rr.Pages += old.Pages
		rr.Records += old.Records
		rr.Inserted += old.Inserted
		rr.Updated += old.Updated
		rr.Unchanged += old.Unchanged
		rr.Skipped += old.Skipped
		rr.Deleted += old.Deleted
		rr.Resumed = rr.Resumed || old.Resumed
	}
	m.results[rr.Resource] = rr
	m.hardExit.set(m.snapshot())
}

// result is the job's result: every selected resource's, the most severe
// exit code, and completed only when every resource completed.
func (m *multiRun) result() *jobResult {
	out := &jobResult{Job: m.jf.Name, Kind: m.opts.Kind, Resources: []resourceResult{}}
	all := true
	var errs []string
	for _, r := range m.jf.Resources { // in file order
		n := r.Name
		rr, ok := m.results[n]
		if !ok {
			continue
		}
		out.Resources = append(out.Resources, *rr)
		if rr.Status != idsync.RunCompleted {
			all = false
		}
		if severity(rr.ExitCode) > severity(out.ExitCode) {
			out.ExitCode = rr.ExitCode
		}
		if rr.ExitCode != 0 && rr.Error != "" {
			errs = append(errs, n+": "+rr.Error)
		}
	}
	out.Error = strings.Join(errs, "; ")
	out.DurationMS = time.Since(m.started).Milliseconds()
	switch {
	case all:
		out.Status = idsync.RunCompleted
	case out.ExitCode == 0:
		out.Status = idsync.RunPartial
	default:
		out.Status = jobStatusOf(out.ExitCode)
	}
	return out
}

// jobStatusOf is the status of a job whose exit code is code (not 0).
func jobStatusOf(code int) string {
	switch code {
	case idsync.ExitInterrupted:
		return idsync.RunInterrupted
	case idsync.ExitLocked:
		return "locked"
	case idsync.ExitNothing:
		return "nothing_to_resume"
	}
	return idsync.RunFailed
}

// print writes the job's result: one JSON object, or a line per resource
// (with the error and hint of each that failed) and a summary line.
func (m *multiRun) print(out *jobResult) {
	if m.g.json {
		m.g.writeResult(m.ios, out)
		return
	}
	for _, rr := range out.Resources {
		r := rr.Result
		r.Job = m.jf.Name + jobfile.ResourceSep + rr.Resource
		if r.RunID == 0 {
			if !m.g.quiet || r.ExitCode != 0 {
				fmt.Fprintf(m.ios.Out, "%s: %s: %s\n", r.Job, r.Status, r.Error)
			}
			continue
		}
		var err error
		if r.ExitCode != 0 {
			err = idsync.Errorf(r.ExitCode, "%s", r.Error)
		}
		printResult(m.ios, m.g, &r, err)
	}
	if !m.g.quiet || out.ExitCode != 0 {
		fmt.Fprintf(m.ios.Out, "%s: %s (%d resources, exit %d) in %s\n", out.Job, out.Status, len(out.Resources), out.ExitCode,
			(time.Duration(out.DurationMS) * time.Millisecond).String())
	}
}

// failedJob reports a job whose resources never started (state file, lock
// or logger): with --json as the job's result object.
func failedJob(ios *IOStreams, g *globalOpts, out *jobResult, err error, red *idsync.Redactor, started time.Time) error {
	if !g.json {
		return err
	}
	out.ExitCode = idsync.ExitCode(err)
	out.Error = red.Redact(err.Error())
	out.Status = jobStatusOf(out.ExitCode)
	out.DurationMS = time.Since(started).Milliseconds()
	g.writeResult(ios, out)
	return &reportedError{code: out.ExitCode}
}
