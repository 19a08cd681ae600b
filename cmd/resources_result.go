package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemsync/idemsync/jobfile"
	idsync "github.com/idemsync/idemsync/sync"
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
	err error // the error that ended the run, for its hint
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
// its last run; a run that could not start again leaves the earlier one
// standing (the job is then not completed, see result).
func (m *multiRun) record(rr *resourceResult, ran bool) {
	old, seen := m.results[rr.Resource]
	if !seen {
		m.order = append(m.order, rr.Resource)
	}
	if seen && old.RunID != 0 && !ran {
		return
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
		if m.dirty[n] && m.selected[n] && rr.ExitCode == 0 {
			// Its parent wrote rows its last run did not walk, and no run
			// could start again: the next run walks them.
			c := *rr
			c.Error = "its parent wrote rows after its run began, and the invocation stopped before it could run again; the next run walks them"
			rr = &c
			all = false
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
	case all && len(m.ran) == 0 && m.cycle != "":
		m.upToDate(out)
	case all:
		out.Status = idsync.RunCompleted
	case out.ExitCode == 0:
		out.Status = idsync.RunPartial
	default:
		out.Status = jobStatusOf(out.ExitCode)
	}
	return out
}

// upToDate makes out, the result of a run that ran no resource because
// every selected one completed a run since the open cycle began (the
// cycle left open by an invocation cut short, then caught up by another
// selection), say so rather than look like a sync: the job and each
// resource are up_to_date, each naming the run it completed earlier.
// The cycle then closes, so the next run syncs them again
// (docs/job-file.md, "Order and cycles").
func (m *multiRun) upToDate(out *jobResult) {
	out.Status = statusUpToDate
	out.Error = fmt.Sprintf("no resource ran: each selected resource completed a run since this selection's cycle opened at %s; the cycle is closed, the next run syncs them again",
		m.cycleAt.UTC().Format(time.RFC3339))
	for i := range out.Resources {
		r := &out.Resources[i]
		r.Error = fmt.Sprintf("not run now: its run %d completed since the cycle opened", r.RunID)
		r.Status = statusUpToDate
	}
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
		if r.RunID == 0 || r.Status == statusUpToDate {
			if m.g.jsonLogs() && r.ExitCode != 0 {
				writeErrorLog(m.ios, m.g, r.Job+": "+r.Status+": "+r.Error, "", r.ExitCode)
			} else if !m.g.jsonLogs() && (!m.g.quiet || r.ExitCode != 0) {
				fmt.Fprintf(m.ios.Out, "%s: %s: %s\n", r.Job, r.Status, r.Error)
			}
			continue
		}
		err := rr.err
		if r.ExitCode != 0 && err == nil {
			err = idsync.Errorf(r.ExitCode, "%s", r.Error)
		}
		printResult(m.ios, m.g, &r, err)
	}
	if !m.g.jsonLogs() && (!m.g.quiet || out.ExitCode != 0) {
		why := ""
		if out.Status == statusUpToDate {
			why = ": " + out.Error
		}
		fmt.Fprintf(m.ios.Out, "%s: %s (%d resources, exit %d) in %s%s\n", out.Job, out.Status, len(out.Resources), out.ExitCode,
			(time.Duration(out.DurationMS) * time.Millisecond).String(), why)
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
