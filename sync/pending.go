package sync

import (
	"context"
	"log/slog"

	"github.com/idemsync/idemsync/contract"
)

// Two passes (docs/deletions.md): a sweep removes (or marks) a row only
// when its key was missed by two consecutive full passes that proved
// absence. One proving pass can still miss a live record: a page or offset
// walk shifted by a removal balanced by an addition, or by a removal
// between two invocations of the pass, pushes a record back across a page
// already read; an API serving its records under other keys for a while
// makes the rows from before the glitch look gone. The first proving pass
// that misses a key leaves its row pending; the next one removes the rows
// it misses too, and any sighting in between (a page of any full pass, a
// write of the row) clears it. The pending set is not stored: it is the
// rows the previous proving pass did not see, read back from its page keys
// in the state file and streamed into the sweep.

// priorOf fills req with the previous proving pass of the run rs, when
// there is one whose keys, and those of every full pass since, are all
// there: the sweep then removes the rows that pass missed too; without one
// it removes nothing (the rows it misses are pending).
func (e *Engine) priorOf(ctx context.Context, rs *runState, req *contract.SweepRequest, log *slog.Logger) error {
	p, ok, err := e.Store.PriorPass(ctx, rs.info.ID)
	if err != nil {
		return err
	}
	if !ok {
		if p.ID != 0 {
			log.Info("this full pass removes nothing: the keys of the previous proving pass, or of a full pass since (one run with deletes: keep, or with a page of dead letters), are not all recorded, so what they saw is not known; the rows this pass did not see are pending",
				"previous_proving_run", p.ID)
		}
		return nil
	}
	req.PriorStart, req.PriorLiveBefore, req.PriorPending = p.StartedAt, p.LiveBefore, p.Pending
	req.Prior = func(fn func(string) error) error {
		return e.Store.SightedKeys(ctx, rs.info.ID, p.ID, fn)
	}
	return nil
}
