package sync

import (
	"context"

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
// there is one whose keys are all there: the sweep then removes the rows
// that pass missed too; without one it removes nothing.
func (e *Engine) priorOf(ctx context.Context, rs *runState, req *contract.SweepRequest) error {
	p, ok, err := e.Store.PriorPass(ctx, rs.info.ID)
	if err != nil || !ok {
		return err
	}
	req.PriorStart, req.PriorLiveBefore = p.StartedAt, p.LiveBefore
	req.Prior = func(fn func(string) error) error {
		return e.Store.SightedKeys(ctx, rs.info.ID, p.ID, fn)
	}
	return nil
}
