package sync

import (
	"context"
	"log/slog"
	"time"
)

// loop commits the pages the pipeline fetches, in order, until the end, a
// limit, an interrupt or an error. A run split into windows
// (incremental.step) walks them one after another: the page that ends a
// window moves the checkpoint to the first page of the next one, and a new
// pipeline starts there. It returns the run's status and the error that
// ended it.
func (e *Engine) loop(ctx context.Context, o Options, rs *runState, sink Sink, log *slog.Logger, started time.Time) (string, error) {
	wins := []Window{runWindow(e.Job, rs.info.Window, rs.info.StartedAt)}
	if rs.info.Kind == KindRun {
		wins = runWindows(e.Job, rs.info.Window, rs.info.StartedAt)
	}
	committed := 0
	for {
		k := min(rs.pos.Win, len(wins)-1)
		status, next, err := e.walkWindow(ctx, o, rs, sink, log, started, wins, k, &committed)
		if !next {
			return status, err
		}
		log.Info("window completed", "window", k+1, "of", len(wins), "from", wins[k].From, "to", wins[k].To)
		rs.seen, rs.prev = map[string]bool{}, "" // positions repeat from window to window
	}
}

// walkWindow commits the pages of window k of wins from rs.pos on. It
// returns next = true when the window ended and the run goes on with the
// next window (rs.pos is its first page); otherwise the run's status and
// the error that ended it.
func (e *Engine) walkWindow(ctx context.Context, o Options, rs *runState, sink Sink, log *slog.Logger, started time.Time,
	wins []Window, k int, committed *int) (string, bool, error) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	maxPages := o.MaxPages
	if maxPages > 0 {
		maxPages = max(o.MaxPages-*committed, 1)
	}
	pages := e.pipeline(pctx, rs.pos, wins[k], rs.to, fetchLimit(e.Job, maxPages, rs.pos, rs.to))
	for {
		if ctx.Err() != nil {
			return RunInterrupted, false, nil
		}
		// A time limit stops after at least one page, so every run progresses.
		if o.MaxPages > 0 && *committed >= o.MaxPages || o.TimeLimit > 0 && *committed > 0 && time.Since(started) >= o.TimeLimit {
			log.Info("stopping: limit reached; the next run continues", "pages", *committed)
			return RunPartial, false, nil
		}
		var fp fetched
		select {
		case f, ok := <-pages:
			if !ok { // the pipeline stopped at its fetch limit
				log.Info("stopping: limit reached; the next run continues", "pages", *committed)
				return RunPartial, false, nil
			}
			fp = f
		case <-ctx.Done():
			return RunInterrupted, false, nil
		}
		if fp.err != nil {
			if ctx.Err() != nil {
				return RunInterrupted, false, nil
			}
			return RunFailed, false, fp.err
		}
		windowEnd := e.inWindow(&fp, wins, k)
		var limitAt time.Time
		if o.TimeLimit > 0 {
			limitAt = started.Add(o.TimeLimit)
		}
		wctx, stop := writeContext(ctx, limitAt, WriteGrace)
		done, err := e.commit(ctx, wctx, rs, sink, log, fp)
		stopped, cancelled := writeStopped(wctx)
		stop()
		if err != nil {
			if cancelled {
				log.Warn("page write cancelled: the database did not answer within the grace; the page rolled back and the next run re-reads it",
					"grace", WriteGrace, "reason", context.Cause(wctx), "err", err)
				return stopped, false, nil
			}
			return RunFailed, false, err
		}
		*committed++
		switch {
		case done:
			return RunCompleted, false, nil
		case windowEnd:
			return "", true, nil
		}
	}
}

// inWindow stamps the page's positions with window k, and when the page
// ends a window that is not the run's last, moves its next position to the
// first page of window k+1 and records the window's end as the mark to
// save (the windows before it are complete). The run's last window sets
// the mark to save too: its end is the run's upper bound. It reports
// whether the page ends a window that is not the last.
func (e *Engine) inWindow(fp *fetched, wins []Window, k int) bool {
	if len(wins) == 1 {
		return false
	}
	fp.pos.Win, fp.next.Win = k, k
	if !fp.next.End {
		return false
	}
	fp.windowTo = wins[k].To
	if k == len(wins)-1 {
		return false
	}
	start := (&pager{job: e.Job}).start("")
	start.Win = k + 1
	fp.next = start
	return true
}

// fetchLimit is how many pages the pipeline may fetch: --max-pages, or for
// page style the pages up to a replay's --to (0: no limit). An offset
// range has no page count: an API that caps its pages serves it in more
// pages than pagination.size says, so the pipeline's own --to check ends it.
func fetchLimit(job *Job, maxPages int, pos Position, to *Position) int {
	limit := int64(maxPages)
	if to != nil {
		n := int64(-1)
		if styleOf(job.Pagination.Style).traits().pageNumbers {
			n = to.Page - pos.Page + 1
		}
		if n >= 0 && (limit == 0 || n < limit) {
			limit = max(n, 1)
		}
	}
	return int(limit)
}
