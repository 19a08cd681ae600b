package runner

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
	idsync "github.com/idemsync/idemsync/sync"
)

// A cycle is one sync of every selected resource. It opens when an
// invocation finds none open, and stays open while invocations are cut
// short (--max-pages, --time-limit, a signal, SIGKILL): the next one syncs
// only the resources that have not begun a completed run since it opened,
// as a run cut short continues where it stopped. An invocation that ends
// completed or failed closes it, so the next one syncs every resource
// again and a resource that keeps failing holds up no other.

// cycleName keys the cycle of the selected resources in the state file:
// the job's name, and the selection when --resource narrowed it.
func (m *Runner) cycleName(selected []jobfile.Resource) string {
	if len(selected) == len(m.File.Resources) {
		return m.File.Name
	}
	names := make([]string, len(selected))
	for i, r := range selected {
		names[i] = r.Name
	}
	return m.File.Name + "|" + strings.Join(names, ",")
}

// openCycle reads the open cycle, or opens one now (always with --restart).
func (m *Runner) openCycle(ctx context.Context, selected []jobfile.Resource) error {
	m.cycle = m.cycleName(selected)
	at, open, err := m.Store.Cycle(ctx, m.cycle)
	if err != nil {
		return err
	}
	if !open || m.Options.Restart { // --restart starts every resource over
		at = m.Started
		if err := m.Store.OpenCycle(ctx, m.cycle, at); err != nil {
			return err
		}
	}
	m.cycleAt = at
	return nil
}

// closeCycle closes the open cycle unless the job ended partial,
// interrupted or skipped (no resource could run: the cycle is as it was).
// A failure to write it is a warning: the next invocation then syncs only
// what this cycle has not.
func (m *Runner) closeCycle(ctx context.Context, status string) {
	if m.cycle == "" || status == contract.RunPartial || status == contract.RunInterrupted || status == StatusSkipped {
		return
	}
	if err := m.Store.CloseCycle(context.WithoutCancel(ctx), m.cycle); err != nil {
		m.Log.Warn("the cycle of the resources stays open", "err", err)
	}
}

// doneInCycle reports whether r's last completed run of kind run began
// since the cycle opened.
func (m *Runner) doneInCycle(ctx context.Context, r jobfile.Resource) (bool, error) {
	runs, err := m.Store.Runs(ctx, r.Job.Name, 0)
	if err != nil {
		return false, err
	}
	for _, run := range runs {
		if run.Kind == contract.KindRun && run.Status == contract.RunCompleted {
			return !run.StartedAt.Before(m.cycleAt), nil
		}
	}
	return false, nil
}

// notResumed lists, after resume, every selected resource it did not
// continue as not run: resume finishes what was started and syncs nothing
// else, so the job is partial, not completed, unless every selected
// resource had a run to finish; run syncs the rest.
func (m *Runner) notResumed(selected []jobfile.Resource) {
	for _, r := range selected {
		if !m.ran[r.Name] {
			m.record(&ResourceResult{Resource: r.Name, Result: idsync.Result{Job: m.File.Name, Kind: m.Options.Kind, Status: StatusNotRun,
				Error: "not continued: resume continues unfinished runs only; run syncs this resource"}}, false)
		}
	}
}

// checkDirty notes whether the child r must run (again) because its
// parent wrote rows after its run began: its unfinished run (run), else
// its last completed one. A child that never completed a run runs anyway.
func (m *Runner) checkDirty(ctx context.Context, r jobfile.Resource, run *contract.RunInfo) error {
	if r.Job.Parent == nil {
		return nil
	}
	var since time.Time
	if run != nil {
		since = run.StartedAt
	} else {
		runs, err := m.Store.Runs(ctx, r.Job.Name, 0)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(runs, func(x contract.RunInfo) bool { return x.Kind == contract.KindRun && x.Status == contract.RunCompleted })
		if i < 0 {
			return nil
		}
		since = runs[i].StartedAt
	}
	dirty, err := m.parentWroteSince(ctx, r.Job.Parent.Name, since)
	m.dirty[r.Name] = dirty
	return err
}

// parentWroteSince reports whether a run of the parent (state name
// parent) that inserted or updated rows may have written them after
// since: one that finished after it or has not finished. A child run that
// began at since does not know those rows. (It may say so of a run that
// wrote before since and finished after: the child then runs once more
// than it needed to.)
func (m *Runner) parentWroteSince(ctx context.Context, parent string, since time.Time) (bool, error) {
	runs, err := m.Store.Runs(ctx, parent, 0)
	if err != nil {
		return false, err
	}
	for _, r := range runs {
		if (r.FinishedAt.IsZero() || r.FinishedAt.After(since)) && r.Inserted+r.Updated > 0 {
			return true, nil
		}
	}
	return false, nil
}

// notRunNow reports, after run, every selected resource this invocation
// did not run, with its last run (it completed one since the cycle
// opened): the job's result holds every selected resource.
func (m *Runner) notRunNow(ctx context.Context, selected []jobfile.Resource) error {
	if m.Options.Resume || m.Options.Kind == contract.KindReplay {
		return nil
	}
	for _, r := range selected {
		if _, ok := m.results[r.Name]; ok {
			continue
		}
		js, err := m.Store.Job(ctx, r.Job.Name)
		if err != nil {
			return err
		}
		if js.LastSync == nil {
			continue
		}
		res := idsync.RunResult(js.LastSync, r.Job.Pagination.Style, js.HWM, r.Job.Secrets)
		res.Job = m.File.Name
		m.record(&ResourceResult{Resource: r.Name, Result: res}, false)
	}
	return nil
}

// wrote notes that resource name's run res ended: a child whose run began
// before its parent wrote rows must run again; a child's new run (not a
// continued one) took its parent list now.
func (m *Runner) wrote(name string, job *idsync.Job, res *idsync.Result) {
	if job.Parent != nil && res.RunID != 0 && !res.Resumed {
		m.dirty[name] = false
	}
	if res.Inserted+res.Updated == 0 {
		return
	}
	for _, r := range m.File.Resources {
		if parentOf(r.Job) == name {
			m.dirty[r.Name] = true
		}
	}
}
