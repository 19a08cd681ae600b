package sync

import (
	"time"

	"github.com/idemsync/idemsync/sync/paging"
)

// Marks from the future (docs/job-file.md, "Records dated in the future").
//
// A record dated far ahead of now (a typo, a placeholder such as
// 2099-12-31, a clock gone wrong) is synced like any other, but a saved
// mark moved to its date would put every later change behind the next
// run's start. So a timestamp mark more than max_future (default 1h)
// after the run's start never moves the saved mark; the run counts such
// records and says so in one warning when it ends. Numeric marks have no
// clock and are not checked.

// futureMarks tallies the records of a run whose mark lies past max_future.
type futureMarks struct {
	n        int64
	furthest string
}

// maxFuture is the job's max_future (hwm or incremental), 0 when it keeps
// no mark.
func (e *Engine) maxFuture() time.Duration {
	switch {
	case paging.Of(e.Job.Pagination.Style).Traits().KeepsMark:
		return e.Job.Pagination.MaxFuture.Duration
	case e.Job.Incremental != nil:
		return e.Job.Incremental.MaxFuture.Duration
	}
	return 0
}

// savableMax returns the highest mark of a page that may move the saved
// mark of a run started at started, and counts the others into fm.
func (e *Engine) savableMax(fp *fetched, started time.Time, fm *futureMarks) string {
	limit := started.Add(e.maxFuture())
	if started.IsZero() || e.maxFuture() <= 0 {
		return fp.pageMax
	}
	best := ""
	for _, m := range fp.marks {
		if m.err != nil || m.mark == "" {
			continue
		}
		if t, ok := paging.ParseTime(m.mark); ok && t.After(limit) {
			fm.n++
			fm.furthest = paging.MaxMark(fm.furthest, m.mark)
			continue
		}
		best = paging.MaxMark(best, m.mark)
	}
	return best
}
