package sync

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
)

// checkUnfinished refuses to continue run when the job's walk is no longer the
// one it was started with (docs/job-file.md, "What defines a job's walk"): its
// checkpoint points into another walk (a page number under another page size, a
// cursor of another query), so continuing it would skip or repeat records and
// still end with exit 0. A run started before identities were kept is
// continued. The error is exit 2; nothing was fetched or changed.
func (e *Engine) checkUnfinished(run *contract.RunInfo, cur Identity) error {
	old, err := DecodeIdentity(run.Identity)
	if err != nil {
		return contract.Errorf(contract.Permanent, "run %d: %w", run.ID, err)
	}
	changes := cur.Changes(old)
	if len(changes) == 0 {
		return nil
	}
	return &contract.Error{Class: contract.Invalid,
		Msg: fmt.Sprintf("the unfinished %s %d of job %s was started with another walk: %s",
			run.Kind, run.ID, e.Job.Name, strings.Join(changes, "; ")),
		Hint: "nothing was fetched and its checkpoint is intact: restore the job file to continue that run, or `idemsync run --restart` to abandon it and start afresh"}
}

// walkChanged returns what changed in the job's walk since its latest run
// of kind run, nil when nothing did, no run is known, or the state file
// predates identities.
func (e *Engine) walkChanged(js *contract.JobState, cur Identity) ([]string, error) {
	if js.LastSync == nil || js.Identity == "" {
		return nil, nil
	}
	old, err := DecodeIdentity(js.Identity)
	if err != nil {
		return nil, contract.Errorf(contract.Permanent, "job %s: %w", js.Name, err)
	}
	return cur.Changes(old), nil
}

// targetLost reports why the target table cannot hold the progress the
// state file records ("" when it can, or when the sink cannot tell): its
// progress marker is behind the state's (restored or rolled back:
// targetProgress), or the table is missing, or empty while the job has a
// saved mark, a continue: true position, or an unfinished run that wrote
// rows.
func (e *Engine) targetLost(ctx context.Context, sink contract.Sink, js *contract.JobState, run *contract.RunInfo) (string, error) {
	if e.behind != "" {
		return e.behind, nil
	}
	progress := js.HWM != "" || run != nil && run.Inserted+run.Updated+run.Unchanged > 0
	if !progress && e.Job.Pagination.Continue && run == nil {
		feed, err := e.feedPosition(ctx, js)
		if err != nil {
			return "", err
		}
		progress = feed != ""
	}
	if !progress {
		return "", nil
	}
	exists, empty, err := sink.TableState(ctx, &e.Job.Table)
	switch {
	case err != nil:
		return "", err
	case !exists:
		return fmt.Sprintf("target table %s does not exist", e.Job.Table.String()), nil
	case empty:
		return fmt.Sprintf("target table %s is empty", e.Job.Table.String()), nil
	}
	return "", nil
}

// startOver decides, for a run of kind run, whether it starts from the
// beginning (no saved mark, no continue: true position) rather than where
// the job left off: on --restart, when the target lost its rows (an
// unfinished run is then abandoned), or when the walk changed since the
// job's last run. It clears the saved mark when so, logs why, and
// returns the run to continue (nil: start a new one).
func (e *Engine) startOver(ctx context.Context, o Options, sink contract.Sink, js *contract.JobState, run *contract.RunInfo, cur Identity) (*contract.RunInfo, bool, error) {
	job := e.Job
	fresh := o.Restart
	why, err := e.targetLost(ctx, sink, js, run)
	if err != nil {
		return nil, false, err
	}
	if why != "" {
		args := []any{"job", job.Name, "why", why}
		if run != nil {
			args = append(args, "abandoned_run", run.ID)
		}
		e.Logger.Info(why+" while the state file holds progress: starting from the beginning", args...)
		run, fresh = nil, true
	}
	if run == nil && !fresh {
		changes, err := e.walkChanged(js, cur)
		if err != nil {
			return nil, false, err
		}
		if len(changes) > 0 {
			e.Logger.Info("the job's walk changed since its last run: starting from the beginning",
				"job", job.Name, "changes", strings.Join(changes, "; "))
			fresh = true
		}
	}
	if fresh && js.HWM != "" {
		if err := e.Store.ClearMark(ctx, job.Name); err != nil {
			return nil, false, err
		}
		js.HWM = ""
	}
	return run, fresh, nil
}
