package sync

import (
	"context"
	"fmt"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/targets"
)

// targetProgress reads the job's progress marker in the target, which
// every page written raises in its own transaction, and sets the value
// the run's pages count on from (docs/guarantees.md, "Job identity"). The
// state records the marker of the job's last page committed with rows
// (or the one a page that wrote nothing was read under); as the target
// commits first, the target may be ahead of it (the pages
// of one crash window, or a state put back from an older backup) but
// never behind. Behind, the target was restored or rolled back: e.behind
// says so, and targetLost takes the target as lost. A target with no
// marker table while the state records one (written by an earlier
// version, or the table dropped by hand) is adopted: its marker is set to
// the state's.
func (e *Engine) targetProgress(ctx context.Context, sink contract.Sink, js *contract.JobState) error {
	job := e.Job
	e.progress, e.held, e.behind, e.progressor = js.Marker, js.Marker, "", nil
	p, ok := sink.(contract.Progressor)
	if !ok {
		return nil
	}
	e.progressor = p
	v, kept, err := p.ReadProgress(ctx, &job.Table, job.Name)
	switch {
	case err != nil:
		return err
	case !kept && js.Marker > 0:
		e.Logger.Info("the target holds no progress markers (written by an earlier version, or their table was dropped): adopting it at the state's progress",
			"job", job.Name, "table", job.Table.String(), "marker", js.Marker)
		return p.AdoptProgress(ctx, &job.Table, job.Name, js.Marker)
	case v < js.Marker || js.Marker > 0 && v/markerEra > js.Marker/markerEra:
		// The run starts from the beginning; a page of it that writes
		// nothing records the target's marker, not the state's: else
		// every run would find the target behind again, and start over.
		e.held = v
		if v < js.Marker {
			e.behind = fmt.Sprintf("target table %s was restored or rolled back: its progress marker is %d, behind the state file's %d", job.Table.String(), v, js.Marker)
			// Its pages count on from the next era: a copy of this state
			// put back later, whose marker the lost pages passed, is then
			// of an earlier era than the target, not taken for ahead of it
			// (docs/guarantees.md, "Progress markers").
			e.progress = (js.Marker/markerEra + 1) * markerEra
		} else {
			e.behind = fmt.Sprintf("target table %s was restored or rolled back since the state file's progress: its progress marker %d counts on from a restore noticed after the state file's %d", job.Table.String(), v, js.Marker)
			e.progress = v
		}
		if db, _ := targets.Lookup(job.Target.URL); db.File && e.Fenced != nil {
			// A state that several hosts share, and a file of one host: the
			// other host's file may be the one the state's marker is from
			// (docs/operations.md, "A second host").
			e.Logger.Warn("the target is a file of this host while the job's state is in PostgreSQL, which other hosts may share: if another host runs this job with a file of its own at this path, its runs and this host's each start from the beginning, and a host killed mid-run can leave its file short of the other's pages; hosts that share a job's state must share its target in PostgreSQL (docs/operations.md, \"A second host\")",
				"job", job.Name, "table", job.Table.String(), "target", job.Target.URL)
		}
	default:
		e.progress, e.held = v, v
	}
	return nil
}

// markerEra is how far a run that finds the target restored moves the
// counter on: to the next multiple of it. A state whose marker is of an
// earlier era than the target's is behind a restore that a run of
// another state, or of this state before it was put back from a copy,
// noticed: its pages after the restored point may be lost
// (docs/guarantees.md, "Progress markers").
const markerEra = int64(1) << 32

// nextProgress sets on the job's table the marker the page about to be
// written raises the target's to, and returns it (0: the sink keeps none).
func (e *Engine) nextProgress() int64 {
	t := &e.Job.Table
	if e.progressor == nil {
		t.Progress = contract.Progress{}
		return 0
	}
	t.Progress = contract.Progress{Job: e.Job.Name, Value: e.progress + 1}
	return t.Progress.Value
}
