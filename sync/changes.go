package sync

import (
	"context"
	"errors"

	"github.com/idemsync/idemsync/contract"
)

// probeChanges refuses, before the run is recorded, a job with
// target.changes whose database keeps no change feed (docs/changes.md).
func (e *Engine) probeChanges(ctx context.Context, sink contract.Sink) error {
	if e.Job.Table.Changes == nil {
		return nil
	}
	if _, err := sink.FeedDB(ctx, &e.Job.Table); errors.Is(err, contract.ErrNotImplemented) {
		return contract.Errorf(contract.Invalid, "target.changes: %s: this database cannot keep a change feed: %w", e.Job.Table.String(), err)
	}
	return nil
}

// stampChanges tells a fed table's sink the run its writes belong to
// (docs/changes.md): Prepare stamps it on the feed before the run's first
// write. A table whose columns are still to be inferred is stamped by the
// first page's Prepare.
func (e *Engine) stampChanges(ctx context.Context, sink contract.Sink, rs *runState) error {
	c := e.Job.Table.Changes
	if c == nil {
		return nil
	}
	c.Run = rs.info.ID
	if e.Job.Infer && len(e.Job.Table.Columns) == 0 {
		return nil
	}
	return sink.Prepare(ctx, &e.Job.Table)
}
