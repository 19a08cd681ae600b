package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
	"github.com/idemsync/idemsync/runner"
	idsync "github.com/idemsync/idemsync/sync"
)

// runResources runs the selected resources of jf (every one when only is
// empty) through a runner.Runner, each resource with runOne, and prints
// the job's result.
func runResources(ctx context.Context, g *globalOpts, ios *IOStreams, jf *jobfile.File, opts idsync.Options, metricsFile string, only []string, started time.Time, gate runGate) error {
	// Disarmed last, after the lock's release and the state file's close
	// (runJob).
	var disarm func()
	defer func() {
		if disarm != nil {
			disarm()
		}
	}()
	red := idsync.NewRedactor()
	for _, r := range jf.Resources {
		red.Merge(r.Job.Secrets)
	}
	for _, r := range jf.Resources { // every output of the job redacts every resource's secrets
		r.Job.Secrets.Merge(red)
	}
	skeleton := &runner.JobResult{Job: jf.Name, Kind: opts.Kind, Status: contract.RunFailed, Resources: []runner.ResourceResult{}}
	log, err := newLogger(ios.ErrOut, g.logFormat, g.logLevel, g.quiet, red, jf.Name)
	if err != nil {
		return failedJob(ios, g, skeleton, contract.Errorf(contract.Invalid, "%w", err), red, started)
	}
	for _, r := range jf.Resources {
		if err := checkStateTarget(g.statePath(r.Job), r.Job); err != nil {
			return failedJob(ios, g, skeleton, err, red, started)
		}
	}
	store, err := openStore(ctx, g.statePath(jf.Resources[0].Job), log)
	if err != nil {
		return failedJob(ios, g, skeleton, interrupted(ctx, err), red, started)
	}
	defer store.Close()
	// One lock per job file: two invocations of the same file, whatever
	// resources they select, never overlap. A run key is one start of
	// the selection.
	gate.scope = keyScope(jf, only)
	var waitUntil time.Time // --if-running wait=D: one deadline for the file's lock and its resources'
	if gate.wait > 0 {
		waitUntil = time.Now().Add(gate.wait)
	}
	unlock, err := gate.acquire(ctx, store, jf.Name, opts.Kind)
	if done, err := gate.reported(ios, g, err); done || err != nil {
		if err == nil {
			return nil
		}
		return failedJob(ios, g, skeleton, interrupted(ctx, err), red, started)
	}
	defer unlock()
	totals := map[string]contract.MetricsTotals{} // each resource's metrics after its last run
	m := &runner.Runner{File: jf, Store: store, Options: opts, Only: only, Started: started, Log: log, Code: codeOf,
		RunResource: func(ctx context.Context, r jobfile.Resource, o idsync.Options, h runner.Hooks) (*idsync.Result, error) {
			metrics := newResourceMetrics(metricsFile, store, jf.Name, r.Name, time.Now(), log)
			metrics.noFile = true
			// A resource's own lease can outlast the file's when a
			// holder of both died: --if-running wait waits for it too.
			var rs contract.Store = store
			if gate.ifRunning == ifRunningWait {
				if unlockR, ok := waitLock(ctx, store, r.Job.Name, waitUntil); ok {
					defer unlockR()
					rs = heldStore{Store: store, job: r.Job.Name}
				}
			}
			res, err := runOne(ctx, g, ios, rs, r.Job, o, metrics, h)
			if metrics.totals.Job != "" {
				totals[r.Name] = metrics.totals
			}
			return res, err
		}}
	if g.json {
		gate := &jsonGate{}
		g.gate = gate
		disarm = armJobHardExit(ios, gate, m, red)
	}
	out, err := m.Run(ctx)
	if err != nil {
		return failedJob(ios, g, skeleton, err, red, started)
	}
	writeResourceMetrics(ctx, metricsFile, jf, store, totals, log)
	if kerr := gate.remember(ctx, store, jf.Name, out.ExitCode, out, limitAt(started, opts)); kerr != nil {
		log.Warn("run key not recorded: a second start with it runs again", "key", gate.key, "err", kerr)
	}
	printJob(ios, g, out)
	if out.ExitCode != 0 {
		return &reportedError{code: out.ExitCode}
	}
	return nil
}

// distinct is names without repeats, in their first order.
func distinct(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// checkOnly checks the --resource names against the file: each names one
// of its resources; replay of a file with several takes exactly one.
func checkOnly(jf *jobfile.File, only []string, kind string) error {
	for _, n := range only {
		if jf.Resource(n) == nil {
			return &usageError{err: fmt.Errorf("--resource %q: job %s has no such resource (it has: %s)", n, jf.Name, strings.Join(jf.Names(), ", "))}
		}
	}
	if kind == contract.KindReplay && jf.Multi && len(only) != 1 {
		return &usageError{err: fmt.Errorf("replay of job %s needs exactly one --resource (one of: %s)", jf.Name, strings.Join(jf.Names(), ", "))}
	}
	return nil
}

// keyScope is the run key's scope of the selection only: "" for every
// resource of jf, else a newline (which no run key holds) and the
// selected resources' names in file order, so that two starts with one
// key and different --resource selections both run, and a selection
// named in another order is the same start.
func keyScope(jf *jobfile.File, only []string) string {
	var names []string
	for _, n := range jf.Names() {
		if slices.Contains(only, n) {
			names = append(names, n)
		}
	}
	if len(only) == 0 || len(names) == len(jf.Resources) {
		return ""
	}
	return "\nresource " + strings.Join(names, ",")
}

// writeResourceMetrics writes the metrics file: each resource's totals
// after its last run in this invocation, and the stored totals of the
// others.
func writeResourceMetrics(ctx context.Context, path string, jf *jobfile.File, store contract.Store, totals map[string]contract.MetricsTotals, log *slog.Logger) {
	if path == "" {
		return
	}
	var all []contract.MetricsTotals
	for _, r := range jf.Resources {
		t, ok := totals[r.Name]
		if !ok {
			var err error
			if t, err = store.Metrics(ctx, jf.Name, r.Name); err != nil || t.LastRun.IsZero() {
				continue
			}
		}
		all = append(all, t)
	}
	if len(all) == 0 {
		return
	}
	if err := writeMetricsFile(path, all...); err != nil {
		log.Warn("metrics file not written", "path", path, "err", err)
	}
}

// printJob writes the job's result: one JSON object, or a line per
// resource (with the error and hint of each that failed) and a summary
// line.
func printJob(ios *IOStreams, g *globalOpts, out *runner.JobResult) {
	if g.json {
		g.writeResult(ios, out)
		return
	}
	for _, rr := range out.Resources {
		r := rr.Result
		r.Job = out.Job + jobfile.ResourceSep + rr.Resource
		if r.RunID == 0 || r.Status == runner.StatusUpToDate {
			if g.jsonLogs() && r.ExitCode != 0 {
				writeErrorLog(ios, g, r.Job+": "+r.Status+": "+r.Error, "", r.ExitCode)
			} else if !g.jsonLogs() && (!g.quiet || r.ExitCode != 0) {
				fmt.Fprintf(ios.Out, "%s: %s: %s\n", r.Job, r.Status, r.Error)
			}
			continue
		}
		err := rr.Err
		if r.ExitCode != 0 && err == nil {
			err = contract.Errorf(rr.Class, "%s", r.Error)
		}
		printResult(ios, g, &r, err)
	}
	if !g.jsonLogs() && (!g.quiet || out.ExitCode != 0) {
		why := ""
		if out.Status == runner.StatusUpToDate {
			why = ": " + out.Error
		}
		fmt.Fprintf(ios.Out, "%s: %s (%d resources, exit %d) in %s%s\n", out.Job, out.Status, len(out.Resources), out.ExitCode,
			(time.Duration(out.DurationMS) * time.Millisecond).String(), why)
	}
}

// failedJob reports a job whose resources never started (state file, lock
// or logger): with --json as the job's result object.
func failedJob(ios *IOStreams, g *globalOpts, out *runner.JobResult, err error, red *idsync.Redactor, started time.Time) error {
	if !g.json {
		return err
	}
	out.Class = contract.ClassOf(err)
	out.ExitCode = exitCode(err)
	out.Error = red.Redact(err.Error())
	out.Status = runner.JobStatus(out.Class)
	out.DurationMS = time.Since(started).Milliseconds()
	g.writeResult(ios, out)
	return &reportedError{code: out.ExitCode}
}
