package sync

import "time"

// JobStatus returns the status of a job as status reports it: never_run,
// running (a process holds its lock), interrupted (its last run stopped
// unfinished: killed or interrupted), partial (stopped by --max-pages or
// --time-limit), failed, or completed (docs/operations.md, "status").
func JobStatus(js *JobState) string {
	switch {
	case js.Holder != "":
		return JobRunning
	case js.LastRun == nil:
		return JobNeverRun
	}
	switch js.LastRun.Status {
	case RunCompleted:
		return JobCompleted
	case RunFailed, RunRefused:
		return JobFailed
	case RunPartial:
		return JobPartial
	case RunAbandoned:
		if js.LastRun.Error != "" { // abandoned by its own failure (distinct.go)
			return JobFailed
		}
		return JobInterrupted
	}
	return JobInterrupted // running without a lock holder = killed; interrupted
}

// RunResult presents a stored run with the fields of a run's --json result.
// style may be "" when the job file is not at hand: a position says its
// style, but one an older build wrote is then read by guess (see
// DecodePosition).
func RunResult(r *RunInfo, style, hwm string, red *Redactor) Result {
	pos, _ := DecodePosition(style, r.Checkpoint)
	status := r.Status
	if status == RunRefused { // a run's status is one of docs/operations.md's ("status")
		status = RunFailed
	}
	res := Result{
		Job: r.Job, RunID: r.ID, Kind: r.Kind, Status: status,
		Pages: r.Pages, Records: r.Records, Inserted: r.Inserted, Updated: r.Updated, Unchanged: r.Unchanged, Skipped: r.Skipped, Deleted: r.Deleted,
		Checkpoint: pos.Describe(style, red), HWM: hwm, Error: red.Redact(r.Error),
	}
	if r.SweepSkipped != "" {
		res.Sweep, res.SweepSkipped = SweepSkippedOutcome, red.Redact(r.SweepSkipped)
	}
	if r.Swept {
		res.PendingDeletes = &r.PendingDeletes
	}
	if !r.FinishedAt.IsZero() {
		res.DurationMS = r.FinishedAt.Sub(r.StartedAt).Milliseconds()
	} else if status == RunRunning {
		res.DurationMS = time.Since(r.StartedAt).Milliseconds()
	}
	return res
}
