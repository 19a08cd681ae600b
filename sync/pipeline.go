package sync

import (
	"context"
	"fmt"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"
)

// fetched is one page on its way from HTTP response to commit: the response,
// the marks of its records, where pagination goes next, or the error that
// stopped it.
type fetched struct {
	pos     Position
	next    Position
	resp    *Response
	marks   []markOf // per record, when the style or incremental needs marks
	pageMax string   // highest valid mark on the page
	mapped  bool     // rows and dead are set (columns are not inferred)
	rows    []Row
	dead    []DeadLetter
	hash    string // content hash of the page's records
	t0      time.Time
	err     error
}

// markOf is a record's mark, or why it has none usable.
type markOf struct {
	mark string
	err  error
}

// fetchPage requests the page at pos and computes everything the commit
// needs that depends only on the page itself. A page at or past a replay's
// --to position (to, nil when none) ends pagination, so that nothing past
// it is requested. It never writes.
func (e *Engine) fetchPage(ctx context.Context, pos Position, window string, to *Position) fetched {
	job := e.Job
	pg := &pager{job: job, f: e.Fetcher}
	fp := fetched{pos: pos, t0: time.Now()}
	where := pos.Describe(job.Pagination.Style, job.Secrets)
	u, err := pg.url(pos, window)
	if err != nil {
		fp.err = Errorf(ExitPermanent, "%s: %w", where, err)
		return fp
	}
	resp, err := e.Fetcher.Fetch(ctx, u)
	if err != nil {
		fp.err = fmt.Errorf("fetch %s: %w", where, err)
		return fp
	}
	e.failpoint("fetched")
	fp.resp = resp
	markPath := e.markPath()
	if markPath != "" {
		fp.marks = make([]markOf, len(resp.Records))
	}
	h := xxhash.New()
	for i, rec := range resp.Records {
		_, _ = h.WriteString(rec.Raw)
		if markPath == "" {
			continue
		}
		if v := rec.Get(markPath); v.Exists() && v.Type != gjson.Null {
			m, err := markFromJSON(v)
			fp.marks[i] = markOf{mark: m, err: err}
			if err == nil {
				fp.pageMax = MaxMark(fp.pageMax, m)
			}
		}
	}
	fp.hash = fmt.Sprintf("%016x", h.Sum64())
	if fp.next, err = pg.next(pos, resp, fp.pageMax); err != nil {
		fp.err = wrapPermanent(fmt.Sprintf("paginate after %s", where), err)
		return fp
	}
	if to != nil && !fp.next.End && lastBefore(job.Pagination.Style, pos, fp.next, *to) {
		fp.next = pos
		fp.next.End = true
	}
	// With fixed columns the rows are mapped here, off the committer's path,
	// while the previous page is being written.
	if !job.Infer {
		fp.rows, fp.dead, fp.err = e.mapRecords(&fp, &job.Table, where)
		fp.mapped = fp.err == nil
	}
	return fp
}

// markPath is the path of the mark in each record: the hwm field, the
// incremental field, or "" when the job keeps no mark.
func (e *Engine) markPath() string {
	switch {
	case e.Job.Pagination.Style == StyleHWM:
		return e.Job.Pagination.Field
	case e.Job.Incremental != nil:
		return e.Job.Incremental.Field
	}
	return ""
}

// pipeline fetches pages ahead of the committer and hands them over in
// pagination order. Sequential styles (cursor, link, hwm, none) fetch page
// N+1 while page N is written; page and offset styles keep up to
// source.concurrency requests in flight. At most limit pages are fetched
// (0: no limit), none past a replay's --to position (to, nil when none).
// Only the pages in flight and one finished page per worker are held in
// memory. Cancel ctx to stop it; the channel is closed after the last page
// (one that ended pagination or failed).
func (e *Engine) pipeline(ctx context.Context, start Position, window string, to *Position, limit int) <-chan fetched {
	style := e.Job.Pagination.Style
	workers := e.Job.Source.Concurrency
	if workers < 1 || (style != StylePage && style != StyleOffset) {
		return e.sequential(ctx, start, window, to, limit)
	}
	return e.concurrent(ctx, start, window, to, limit, workers)
}

// sequential follows pagination one page at a time, one page ahead.
func (e *Engine) sequential(ctx context.Context, pos Position, window string, to *Position, limit int) <-chan fetched {
	out := make(chan fetched) // unbuffered: one page fetched ahead of the commit
	go func() {
		defer close(out)
		for n := 0; limit == 0 || n < limit; n++ {
			fp := e.fetchPage(ctx, pos, window, to)
			select {
			case out <- fp:
			case <-ctx.Done():
				return
			}
			if fp.err != nil || fp.next.End {
				return
			}
			pos = fp.next
		}
	}()
	return out
}

// concurrent fetches pages start, start+1, … with up to workers requests in
// flight and emits them in order. It stops issuing requests past a page
// that ended pagination as soon as one is seen.
func (e *Engine) concurrent(ctx context.Context, start Position, window string, to *Position, limit, workers int) <-chan fetched {
	out := make(chan fetched)
	step := func(pos Position, k int64) Position {
		if e.Job.Pagination.Style == StylePage {
			return Position{Page: pos.Page + k}
		}
		return Position{Offset: pos.Offset + k*int64(e.Job.Pagination.Size)}
	}
	var endAt atomic.Int64 // index of the first page known to end pagination
	endAt.Store(-1)
	type slot struct {
		idx int64
		fp  fetched
	}
	results := make(chan slot, workers)
	tokens := make(chan struct{}, workers) // one per page not yet emitted
	go func() {
		var wg gosync.WaitGroup
		defer func() {
			wg.Wait()
			close(results)
		}()
		for idx := int64(0); limit == 0 || idx < int64(limit); idx++ {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			if end := endAt.Load(); end >= 0 && idx > end {
				return // past the known end: no request
			}
			wg.Add(1)
			go func(idx int64) {
				defer wg.Done()
				fp := e.fetchPage(ctx, step(start, idx), window, to)
				if fp.err == nil && fp.next.End {
					for {
						cur := endAt.Load()
						if cur >= 0 && cur <= idx || endAt.CompareAndSwap(cur, idx) {
							break
						}
					}
				}
				results <- slot{idx, fp}
			}(idx)
		}
	}()
	go func() {
		defer close(out)
		pending := map[int64]fetched{}
		next := int64(0)
		for r := range results {
			pending[r.idx] = r.fp
			for {
				fp, ok := pending[next]
				if !ok {
					break
				}
				delete(pending, next)
				select {
				case out <- fp:
				case <-ctx.Done():
					drain(results)
					return
				}
				<-tokens
				next++
				if fp.err != nil || fp.next.End {
					drain(results)
					return
				}
			}
		}
	}()
	return out
}

func drain[T any](c <-chan T) {
	go func() {
		for range c {
		}
	}()
}
