package sync

import (
	"context"
	"time"

	"github.com/idemsync/idemsync/internal/failpoint"
)

// timeLine returns the clock the run stamps its writes with
// (_idemsync_synced_at, and a tombstone's mark): this host's clock when
// the run begins, but never before just after the latest start the state
// recorded, and from there the time elapsed since by the monotonic clock.
// A sweep spares the rows written since the previous proving pass began by
// comparing their stamps with that pass's recorded start, and so does a
// child walking the parents written since its last run; that pass may have
// run on another host whose clock is ahead (the state in PostgreSQL), or
// on this host before its clock was stepped back. Any run that begins
// after a run's start was recorded stamps its writes after that start,
// whatever the clocks say (docs/deletions.md, "One time line per job").
func (e *Engine) timeLine(ctx context.Context) (func() time.Time, error) {
	latest, err := e.Store.LatestStart(ctx)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	base := failpoint.Now().Round(0)
	if floor := latest.Add(time.Millisecond); !latest.IsZero() && base.Before(floor) {
		e.Logger.Info("this host's clock is behind the latest run start the state recorded: the run's writes are stamped from just after that start",
			"job", e.Job.Name, "latest_start", latest.UTC(), "behind", floor.Sub(base).Round(time.Millisecond))
		base = floor
	}
	return func() time.Time { return base.Add(time.Since(began)) }, nil
}
