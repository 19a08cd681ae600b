package sync

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// loop commits the pages the pipeline fetches, in order, until the end, a
// limit, an interrupt or an error. A run split into windows
// (incremental.step) is walked by loopWindows. It returns the run's status
// and the error that ended it.
func (e *Engine) loop(ctx context.Context, o Options, rs *runState, sink contract.Sink, log *slog.Logger, started time.Time) (string, error) {
	if e.Job.Parent != nil {
		return e.loopParents(ctx, o, rs, sink, log, started)
	}
	wins := runWindowsOf(e.Job, rs.info)
	if len(wins) > 1 {
		return e.loopWindows(ctx, o, rs, sink, log, started, windowList(wins))
	}
	pctx, cancel := context.WithCancel(ctx)
	win := wins[0]
	pages := e.pipeline(pctx, rs.pos, win, rs.to, fetchLimit(e.Job, o.MaxPages, rs.pos, rs.to), rs.info.MaxMark)
	// The pipeline ends before this returns: a page still being mapped
	// would race the engine's next Run (as loopWindows' walks would).
	defer func() {
		cancel()
		drain(pages)
	}()
	committed := 0
	for {
		if ctx.Err() != nil {
			return contract.RunInterrupted, nil
		}
		// A time limit stops after at least one page, so every run progresses.
		if o.MaxPages > 0 && committed >= o.MaxPages || o.TimeLimit > 0 && committed > 0 && time.Since(started) >= o.TimeLimit {
			log.Info("stopping: limit reached; the next run continues", "pages", committed)
			return contract.RunPartial, nil
		}
		var fp fetched
		select {
		case f, ok := <-pages:
			if !ok { // the pipeline stopped at its fetch limit
				log.Info("stopping: limit reached; the next run continues", "pages", committed)
				return contract.RunPartial, nil
			}
			fp = f
		case <-ctx.Done():
			return contract.RunInterrupted, nil
		}
		if fp.err != nil {
			if ctx.Err() != nil {
				return contract.RunInterrupted, nil
			}
			return contract.RunFailed, fp.err
		}
		status, done, err := e.commitBounded(ctx, o, rs, sink, log, started, fp)
		if status != "" {
			return status, err
		}
		committed++
		if done {
			return contract.RunCompleted, nil
		}
	}
}

// commitBounded commits fp under the write context of the run's limits:
// a signal or the time limit stops the write only after WriteGrace. It
// returns a status other than "" when the run stops here (the write was
// stopped: the page rolled back; or it failed), and whether the page
// completed the run.
func (e *Engine) commitBounded(ctx context.Context, o Options, rs *runState, sink contract.Sink, log *slog.Logger, started time.Time, fp fetched) (string, bool, error) {
	var limitAt time.Time
	if o.TimeLimit > 0 {
		limitAt = started.Add(o.TimeLimit)
	}
	wctx, stop := writeContext(ctx, limitAt, WriteGrace)
	done, err := e.commit(ctx, wctx, rs, sink, log, fp)
	stopped, cancelled := writeStopped(wctx)
	stop()
	if err != nil {
		var ce *checkpointError
		switch {
		case cancelled && errors.As(err, &ce):
			log.Warn("checkpoint write cancelled: the state did not answer within the grace; the page's rows are in the target, its checkpoint is not, and the next run re-reads the page",
				"grace", WriteGrace, "reason", context.Cause(wctx), "err", err)
			return stopped, false, nil
		case cancelled:
			log.Warn("page write cancelled: the database did not answer within the grace; the page rolled back and the next run re-reads it",
				"grace", WriteGrace, "reason", context.Cause(wctx), "err", err)
			return stopped, false, nil
		}
		return contract.RunFailed, false, err
	}
	return "", done, nil
}

// fetchLimit is how many pages the pipeline may fetch: --max-pages, or for
// page style the pages up to a replay's --to (0: no limit). An offset
// range has no page count: an API that caps its pages serves it in more
// pages than pagination.size says, so the pipeline's own --to check ends it.
func fetchLimit(job *Job, maxPages int, pos paging.Position, to *paging.Position) int {
	limit := int64(maxPages)
	if to != nil {
		n := int64(-1)
		if paging.Of(job.Pagination.Style).Traits().PageNumbers {
			n = paging.PageOf(to.At).Page - paging.PageOf(pos.At).Page + 1
		}
		if n >= 0 && (limit == 0 || n < limit) {
			limit = max(n, 1)
		}
	}
	return int(limit)
}
