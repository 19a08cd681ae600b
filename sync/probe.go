package sync

import (
	"context"
	"errors"

	"github.com/idemsync/idemsync/contract"
)

// probeSink checks, as soon as the target is opened and before the run is
// recorded or anything fetched, that the database does what the job needs
// (contract.ErrNotImplemented): telling whether the table exists (the
// target-lost check, docs/guarantees.md) for every job, sweeping for a job
// with deletes: soft or hard (docs/deletions.md), reading the parent table
// for a child resource. It also sets e.validator: a database that cannot
// check rows before they are written checks none. Only ErrNotImplemented
// counts here; any other error of a probe is met again, and reported, where
// the run makes the same call.
func (e *Engine) probeSink(ctx context.Context, sink contract.Sink) error {
	job := e.Job
	if _, _, err := sink.TableState(ctx, &job.Table); errors.Is(err, contract.ErrNotImplemented) {
		return contract.Errorf(contract.Invalid, "target table %s: this database cannot tell whether the table exists, which every run checks: %w", job.Table.String(), err)
	}
	if job.sweepsDeletes() {
		if _, err := sink.KeyForms(ctx, &job.Table, nil); errors.Is(err, contract.ErrNotImplemented) {
			return contract.Errorf(contract.Invalid, "target.deletes: %s: this database cannot sweep deleted rows: %w", job.Table.String(), err)
		}
	}
	if job.Parent != nil {
		p := &job.Parent.Table
		if _, err := sink.ParentRows(ctx, p, p.Key, contract.ParentFilter{Limit: 1}); errors.Is(err, contract.ErrNotImplemented) {
			return contract.Errorf(contract.Permanent, "parent %s: the target database cannot read the parent table: %w", job.Parent.Resource, err)
		}
	}
	if err := e.probeChanges(ctx, sink); err != nil {
		return err
	}
	e.validator = sink
	if err := sink.CheckRow(&job.Table, contract.Row{}); errors.Is(err, contract.ErrNotImplemented) {
		e.validator = nil
	}
	return nil
}
