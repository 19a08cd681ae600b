package sync

import (
	"context"
	"fmt"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// pageWriter is how one page's rows reach the target (docs/guarantees.md,
// "One transaction per page", "Fenced targets").
type pageWriter struct {
	tx     contract.TxSink // the sink, when it lets work into its page transaction
	joined bool            // the checkpoint commits in the page's transaction
	key    string          // the fencing key and token, when fenced
	token  int64
}

// pageWrite is the writer of a page of rows to sink: joined when the
// command found the state in the target's database (Engine.JoinState)
// and both sides can, fenced when the state holds a lease on the job and
// the sink can fence, plain otherwise (or with no row to write).
func (e *Engine) pageWrite(sink contract.Sink, rows []contract.Row) pageWriter {
	ts, ok := sink.(contract.TxSink)
	if !ok || e.Fenced == nil || len(rows) == 0 {
		return pageWriter{}
	}
	key, token, held := e.Fenced.Fencing(e.Job.Name)
	if !held {
		return pageWriter{}
	}
	return pageWriter{tx: ts, joined: e.JoinState, key: key, token: token}
}

// upsertTarget upserts rows in one target transaction as pw says. Joined,
// the checkpoint build(counts) commits in it (*pc is set), and a commit
// that failed as a lost connection is decided by reading the checkpoint
// back: committed, the page is done. A failed write names the page and
// table.
func (e *Engine) upsertTarget(ctx, wctx context.Context, sink contract.Sink, rows []contract.Row, where string, pw pageWriter, build func(contract.Counts) *contract.PageCommit, pc **contract.PageCommit) (contract.Counts, error) {
	job := e.Job
	if len(rows) == 0 {
		return contract.Counts{}, nil
	}
	var counts contract.Counts
	var err error
	// A lease lost or past its trusted time writes nothing, to a target
	// no token fences included (docs/operations.md, "Leases").
	if e.Fenced != nil {
		if err := e.Fenced.Holds(job.Name); err != nil {
			return contract.Counts{}, fmt.Errorf("write %s to %s: %w", where, job.Table.String(), err)
		}
	}
	switch {
	case pw.joined:
		since := time.Now()
		counts, err = pw.tx.UpsertIn(wctx, &job.Table, rows, func(ctx context.Context, tx contract.PageTx, n contract.Counts) error {
			*pc = build(n)
			counts = n
			return e.Fenced.CommitPageIn(ctx, tx, job.Name, *pc)
		})
		if err != nil && *pc != nil && contract.ClassOf(err) == contract.Transient {
			if ok, rerr := e.Fenced.PageCommitted(context.WithoutCancel(ctx), *pc); rerr == nil && ok {
				e.Logger.Warn("the page's commit was not acknowledged, but its checkpoint reads back committed", "position", where, "err", err)
				e.Fenced.CommittedIn(job.Name, since)
				return counts, nil
			}
		}
		if err != nil {
			*pc = nil
		} else {
			e.Fenced.CommittedIn(job.Name, since)
		}
	case pw.tx != nil:
		counts, err = pw.tx.UpsertIn(wctx, &job.Table, rows, func(ctx context.Context, tx contract.PageTx, _ contract.Counts) error {
			if err := e.Fenced.Holds(job.Name); err != nil {
				return err
			}
			return tx.Fence(ctx, pw.key, pw.token)
		})
	default:
		counts, err = sink.Upsert(wctx, &job.Table, rows)
	}
	if err != nil {
		return contract.Counts{}, fmt.Errorf("write %s to %s: %w", where, job.Table.String(), err)
	}
	return counts, nil
}
