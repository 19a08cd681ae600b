package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

// JobResult is the --json object of run/resume/replay for a job file with
// several resources (docs/job-file.md, "Running a file with several
// resources").
type JobResult struct {
	Job        string           `json:"job"`
	Kind       string           `json:"kind"`
	Status     string           `json:"status"`
	ExitCode   int              `json:"exit_code"`
	DurationMS int64            `json:"duration_ms"`
	Error      string           `json:"error"`
	Resources  []ResourceResult `json:"resources"`
	// Class is the most severe class of its resources' failures (None:
	// none failed); ExitCode is Runner.Code's for it.
	Class contract.Class `json:"-"`
}

// ResourceResult is one resource's v1 run object, plus its name.
type ResourceResult struct {
	Resource string `json:"resource"`
	idsync.Result
	Err   error          `json:"-"` // the error that ended the run, for its hint
	Class contract.Class `json:"-"` // its class of failure (None: it did not fail); ExitCode is Runner.Code's
}

// severity orders classes of failure for a job's result: the most severe
// of its resources' wins (invalid > permanent > transient > locked >
// nothing to resume > interrupted > none).
func severity(c contract.Class) int {
	switch c {
	case contract.None:
		return 0
	case contract.Invalid:
		return 6
	case contract.Permanent:
		return 5
	case contract.Transient:
		return 4
	case contract.Locked:
		return 3
	case contract.NothingToResume:
		return 2
	case contract.Interrupted:
		return 1
	}
	return 5
}

// nothingRanStatus is the status of a resource whose run never started.
func nothingRanStatus(c contract.Class) string {
	switch c {
	case contract.NothingToResume:
		return "nothing_to_resume"
	case contract.Locked:
		return "locked"
	}
	return contract.RunFailed
}

// record keeps rr as its resource's result. A resource run twice in one
// invocation (a child continued, then run again after its parent) reports
// its last run; a run that could not start again leaves the earlier one
// standing (the job is then not completed, see result).
func (m *Runner) record(rr *ResourceResult, ran bool) {
	old, seen := m.results[rr.Resource]
	if !seen {
		m.order = append(m.order, rr.Resource)
	}
	if seen && old.RunID != 0 && !ran {
		return
	}
	m.results[rr.Resource] = rr
	m.live.set(m.snapshot())
}

// result is the job's result: every selected resource's, the most severe
// exit code, and completed only when every resource completed.
func (m *Runner) result() *JobResult {
	out := &JobResult{Job: m.File.Name, Kind: m.Options.Kind, Resources: []ResourceResult{}}
	all := true
	var errs []string
	for _, r := range m.File.Resources { // in file order
		n := r.Name
		rr, ok := m.results[n]
		if !ok {
			continue
		}
		if m.dirty[n] && m.selected[n] && rr.Class == contract.None {
			// Its parent wrote rows its last run did not walk, and no run
			// could start again: the next run walks them.
			c := *rr
			c.Error = "its parent wrote rows after its run began, and the invocation stopped before it could run again; the next run walks them"
			rr = &c
			all = false
		}
		out.Resources = append(out.Resources, *rr)
		if rr.Status != contract.RunCompleted {
			all = false
		}
		if severity(rr.Class) > severity(out.Class) {
			out.Class = rr.Class
		}
		if rr.Class != contract.None && rr.Error != "" {
			errs = append(errs, n+": "+rr.Error)
		}
	}
	out.ExitCode = m.Code(out.Class)
	out.Error = strings.Join(errs, "; ")
	out.DurationMS = time.Since(m.Started).Milliseconds()
	switch {
	case all && len(m.ran) == 0 && m.cycle != "":
		m.upToDate(out)
	case all:
		out.Status = contract.RunCompleted
	case out.Class == contract.None && len(m.ran) == 0 && allSkipped(out.Resources):
		// No resource could run (each waits for a parent that did not
		// complete): skipped, as --if-running skip is, not partial, which
		// says a limit stopped the run (docs/job-file.md, "Running a file
		// with several resources", Failures).
		out.Status = StatusSkipped
		for _, r := range out.Resources {
			errs = append(errs, r.Resource+": "+r.Error)
		}
		out.Error = strings.Join(errs, "; ")
	case out.Class == contract.None:
		out.Status = contract.RunPartial
	default:
		out.Status = JobStatus(out.Class)
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
func (m *Runner) upToDate(out *JobResult) {
	out.Status = StatusUpToDate
	out.Error = fmt.Sprintf("no resource ran: each selected resource completed a run since this selection's cycle opened at %s; the cycle is closed, the next run syncs them again",
		m.cycleAt.UTC().Format(time.RFC3339))
	for i := range out.Resources {
		r := &out.Resources[i]
		r.Error = fmt.Sprintf("not run now: its run %d completed since the cycle opened", r.RunID)
		r.Status = StatusUpToDate
	}
}

// JobStatus is the status of a job that failed with class c (not None).
func JobStatus(c contract.Class) string {
	switch c {
	case contract.Interrupted:
		return contract.RunInterrupted
	case contract.Locked:
		return "locked"
	case contract.NothingToResume:
		return "nothing_to_resume"
	}
	return contract.RunFailed
}

// allSkipped reports whether rs has resources and every one is skipped.
func allSkipped(rs []ResourceResult) bool {
	for _, r := range rs {
		if r.Status != StatusSkipped {
			return false
		}
	}
	return len(rs) > 0
}
