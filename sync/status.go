package sync

import (
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// JobStatus returns the status of a job as status reports it: never_run,
// running (a process holds its lock), interrupted (its last run stopped
// unfinished: killed or interrupted), partial (stopped by --max-pages or
// --time-limit), failed, or completed (docs/operations.md, "status").
func JobStatus(js *contract.JobState) string {
	switch {
	case js.Holder != "":
		return contract.JobRunning
	case js.LastRun == nil:
		return contract.JobNeverRun
	}
	switch js.LastRun.Status {
	case contract.RunCompleted:
		return contract.JobCompleted
	case contract.RunFailed, contract.RunRefused:
		return contract.JobFailed
	case contract.RunPartial:
		return contract.JobPartial
	case contract.RunAbandoned:
		if js.LastRun.Error != "" { // abandoned by its own failure (distinct.go)
			return contract.JobFailed
		}
		return contract.JobInterrupted
	}
	return contract.JobInterrupted // running without a lock holder = killed; interrupted
}

// RunResult presents a stored run with the fields of a run's --json result.
// style may be "" when the job file is not at hand: a position says its
// style, but one an older build wrote is then read by guess (see
// DecodePosition).
func RunResult(r *contract.RunInfo, style, hwm string, red *Redactor) Result {
	pos, _ := paging.DecodePosition(style, r.Checkpoint)
	status := r.Status
	if status == contract.RunRefused { // a run's status is one of docs/operations.md's ("status")
		status = contract.RunFailed
	}
	res := Result{
		Job: r.Job, RunID: r.ID, Kind: r.Kind, Status: status,
		Pages: r.Pages, Records: r.Records, Inserted: r.Inserted, Updated: r.Updated, Unchanged: r.Unchanged, Skipped: r.Skipped, Deleted: r.Deleted,
		Children:   r.Children,
		Checkpoint: pos.Describe(style, red), HWM: hwm, Error: red.Redact(r.Error),
	}
	if r.SchemaDiscards != (contract.SchemaDiscards{}) {
		res.SchemaDiscards = &r.SchemaDiscards
	}
	if r.SweepSkipped != "" {
		res.Sweep, res.SweepSkipped = SweepSkippedOutcome, red.Redact(r.SweepSkipped)
	}
	if r.Swept {
		res.PendingDeletes = &r.PendingDeletes
	}
	if !r.FinishedAt.IsZero() {
		res.DurationMS = r.FinishedAt.Sub(r.StartedAt).Milliseconds()
	} else if status == contract.RunRunning {
		res.DurationMS = time.Since(r.StartedAt).Milliseconds()
	}
	return res
}
