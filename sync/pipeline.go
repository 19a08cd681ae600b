package sync

import (
	"context"
	"fmt"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/failpoint"
	"github.com/idemsync/idemsync/sync/paging"
)

// fetched is one page on its way from HTTP response to commit: the response,
// the marks of its records, where pagination goes next, or the error that
// stopped it.
type fetched struct {
	pos     paging.Position
	next    paging.Position
	resp    *contract.Response
	marks   []markOf // per record, when the style or incremental needs marks
	pageMax string   // highest valid mark on the page
	ref     string   // the mark whose kind the page's marks were read in ("" when none)
	mapped  bool     // rows and dead are set (columns are not inferred)
	rows    []contract.Row
	dead    []contract.DeadLetter
	hash    string // content hash of the page's records
	t0      time.Time
	err     error
	ahead   *contract.Response // the response at next, fetched to prove this page's end
	capped  int                // > 0: this page found the API serving at most capped records per page
	// windowTo is the upper bound of the window this page completes
	// (incremental.step), "" for any other page: the mark to save.
	windowTo string
	// ckpt, when set, is the run's checkpoint after this page where it is
	// not next: the windows in flight (incremental.concurrency).
	ckpt *paging.Position
	// parent is the parent row of a child's page (Window.Parent), "" for
	// any other page.
	parent string
	// noProof, when set, is why this page, the last, cannot prove the
	// end of the list (endResult.weak): the pass's sweep is skipped.
	noProof string
	total   *pageTotal // pagination.total as the end decision read it (nil: not read)
	// schema is what target.schema did to the page (schema.go), set when
	// the columns are inferred.
	schema schemaPage
	// where names the page in the messages of its mapping (mapFetched).
	where string
}

// checkpoint is the run's position after the page: ckpt, or next.
func (fp *fetched) checkpoint() paging.Position {
	if fp.ckpt != nil {
		return *fp.ckpt
	}
	return fp.next
}

// markOf is a record's mark, or why it has none usable.
type markOf struct {
	mark string
	err  error
}

// fetchPage requests the page at pos and computes everything the commit
// needs that depends only on the page itself. A page at or past a replay's
// --to position (to, nil when none) ends pagination, so that nothing past
// it is requested. pre, when set, is the page's response, already fetched
// while proving the previous page's end. A page that contradicts itself
// (empty or short while another signal says more) is fetched again, up to
// retry.attempts times, after the waits of Backoff (the schedule the
// fetcher's client waits with too), then fails as transient (exit 3). It
// never writes. ref is a mark of the walk's kind when neither pos nor win
// has one (walkMark): that of a page before.
func (e *Engine) fetchPage(ctx context.Context, pos paging.Position, win Window, to *paging.Position, pre *contract.Response, ref string) fetched {
	job := e.Job
	pg := &pager{job: job, src: e.Source, log: e.Logger}
	if win.Parent != "" && pos.Parent == "" {
		// Every message about this page (and the pages it probes) names
		// its parent as status does, "parent N (id=…)", not "window N".
		pos.Parent = e.parentDesc(win.Parent)
	}
	fp := fetched{pos: pos, t0: time.Now(), parent: win.Parent}
	where := pos.Describe(job.Pagination.Style, job.Secrets)
	if win.Parent != "" {
		p := pos
		p.Win, p.Fly, p.Parent = 0, nil, ""
		where = "parent " + job.Parent.Resource + " " + e.parentDesc(win.Parent) + ", " + p.Describe(job.Pagination.Style, job.Secrets)
	}
	u, err := pg.request(pos, win)
	if err != nil {
		fp.err = contract.Errorf(contract.Permanent, "%s: %w", where, err)
		return fp
	}
	probe := func(next paging.Position) (*contract.Response, string, error) {
		pu, err := pg.request(next, win)
		if err != nil {
			return nil, "", contract.Errorf(contract.Permanent, "%s: %w", next.Describe(job.Pagination.Style, job.Secrets), err)
		}
		resp, err := e.Source.Fetch(ctx, pu)
		if err != nil {
			return nil, "", fetchErr(next.Describe(job.Pagination.Style, job.Secrets), " (to tell whether "+where+" is the last page)", err)
		}
		_, pageMax, _, _ := e.pageMarks(resp, walkMark(next, win, ref))
		return resp, pageMax, nil
	}
	attempts := max(job.Retry.Attempts, 1)
	for attempt := 1; ; attempt++ {
		resp := pre
		if pre == nil {
			if resp, err = e.Source.Fetch(ctx, u); err != nil {
				fp.err = fetchErr(where, "", err)
				return fp
			}
		}
		pre = nil
		failpoint.Hit("fetched")
		fp.resp = resp
		fp.marks, fp.pageMax, fp.hash, fp.ref = e.pageMarks(resp, walkMark(pos, win, ref))
		if err := e.checkAscending(fp.marks); err != nil {
			fp.err = &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("%s: %v", where, err),
				Hint: "style hwm needs the records sorted by pagination.field, ascending (set the API's sort parameter in source.query)"}
			return fp
		}
		d, err := pg.decideEnd(pos, resp, fp.pageMax, to, probe)
		if err != nil {
			if ctx.Err() != nil {
				fp.err = ctx.Err()
				return fp
			}
			fp.err = wrapPermanent(fmt.Sprintf("paginate after %s", where), err)
			return fp
		}
		if d.contra == "" {
			fp.next, fp.ahead, fp.capped, fp.noProof, fp.total = d.next, d.ahead, d.capped, d.weak, d.total
			break
		}
		if attempt >= attempts {
			fp.err = &contract.Error{Class: contract.Transient, Msg: fmt.Sprintf("%s (after %d attempt(s))", d.contra, attempt),
				Hint: "the API contradicted the end of pagination; nothing past this page was committed and the checkpoint is intact: run again later"}
			return fp
		}
		wait := Backoff(job.Retry.MinWait.Duration, job.Retry.MaxWait.Duration, attempt-1, 0, false)
		e.Logger.Warn("end of pagination contradicted; fetching it again", "job", job.Name, "why", d.contra,
			"attempt", attempt+1, "of", attempts, "wait", wait.Round(time.Millisecond).String())
		if !sleepCtx(ctx, wait) {
			fp.err = ctx.Err()
			return fp
		}
	}
	if to != nil && !fp.next.End && paging.LastBefore(job.Pagination.Style, pos, fp.next, *to) {
		fp.next = pos
		fp.next.End = true
		fp.ahead = nil
	}
	fp.where = where
	return fp
}

// mapFetched maps the records of a fetched page to rows when the columns
// are fixed, off the committer's path: while the previous page is being
// written (mapStage, or a worker of concurrent). Inferred columns are
// mapped by the committer: inference must see the pages in order.
func (e *Engine) mapFetched(fp *fetched) {
	if e.Job.Infer || fp.err != nil {
		return
	}
	fp.rows, fp.dead, _, fp.err = e.mapRecords(fp, &e.Job.Table, fp.where)
	fp.mapped = fp.err == nil
}

// mapStage maps the pages of in (mapFetched) and hands them on in order:
// page N is mapped while page N+1 is fetched and page N-1 committed, so
// that fetching a page and mapping one overlap (docs/performance.md,
// "Round five"). It stops after a page that failed, and maps nothing once
// ctx is done. out is closed only once the fetcher has stopped too, so a
// consumer that cancels ctx and drains out knows no goroutine of the walk
// is left (none may outlive the run: the engine's next Run would race it).
func (e *Engine) mapStage(ctx context.Context, in <-chan fetched) <-chan fetched {
	out := make(chan fetched)
	go func() {
		defer close(out)
		for fp := range in {
			if ctx.Err() != nil {
				break
			}
			fetchFailed := fp.err != nil
			e.mapFetched(&fp)
			select {
			case out <- fp:
			case <-ctx.Done():
			}
			if fp.err != nil && !fetchFailed {
				// The fetcher, unaware, waits on its send until ctx is
				// done (the run cancels it when it ends): nothing past a
				// page that failed to map is fetched but the one in
				// flight. One whose fetch failed has stopped by itself
				// (a fan-out's walk may take its 404 for the parent's end).
				<-ctx.Done()
			}
			if fp.err != nil || ctx.Err() != nil {
				break
			}
		}
		drain(in) // until the fetcher has stopped
	}()
	return out
}

// walkMark is the mark whose kind the marks of a page at pos of window win
// are read in: the mark the page was asked from (the hwm position's, or the
// incremental window's lower bound), else ref, the first mark the walk read
// on an earlier page ("" when none).
func walkMark(pos paging.Position, win Window, ref string) string {
	if a, ok := pos.At.(paging.HWMAt); ok && a.Mark != "" {
		return a.Mark
	}
	if win.From != "" {
		return win.From
	}
	return ref
}

// pageMarks returns the marks of a page's records (nil when the job keeps
// no mark), the highest valid one, the page's content hash, and the mark
// whose kind they were read in. The marks are of the kind of ref, the
// walk's (walkMark), else of the page's first mark: a mark of the other
// kind is a bad one (docs/pagination.md, "hwm"), never compared as text.
func (e *Engine) pageMarks(resp *contract.Response, ref string) ([]markOf, string, string, string) {
	markPath := e.markPath()
	var marks []markOf
	if markPath != "" {
		marks = make([]markOf, len(resp.Records))
	}
	pageMax := ""
	kind := paging.MarkKind(ref) // the walk's kind, read once, not per record
	h := xxhash.New()
	for i, rec := range resp.Records {
		_, _ = h.WriteString(rec.Raw)
		if markPath == "" {
			continue
		}
		if v := rec.Get(markPath); v.Exists() && v.Type != gjson.Null {
			m, err := paging.MarkFromJSON(v)
			if err == nil {
				mk := paging.MarkKind(m)
				if kind == "" {
					ref, kind = m, mk
				}
				if mk != kind {
					err = fmt.Errorf("%s is a %s, but the walk's marks are %ss (%s)", paging.Elide(m, 40), mk, kind, paging.Elide(ref, 40))
					m = ""
				}
			}
			marks[i] = markOf{mark: m, err: err}
			if err == nil {
				pageMax = paging.MaxMark(pageMax, m)
			}
		}
	}
	return marks, pageMax, fmt.Sprintf("%016x", h.Sum64()), ref
}

// keepKind reads the marks of fp again in the kind of ref, the first mark
// of the pages before it in the walk, when a worker fetched fp before that
// was known and read them in the kind of fp's own first mark; it then maps
// fp (workers leave such a page unmapped). Called in page order, it
// returns the walk's reference mark after fp.
func (e *Engine) keepKind(ctx context.Context, fp *fetched, ref string) string {
	if fp.err != nil {
		return ref
	}
	if ref != "" && fp.ref != "" && paging.MarkKind(fp.ref) != paging.MarkKind(ref) {
		fp.marks, fp.pageMax, _, fp.ref = e.pageMarks(fp.resp, ref)
	}
	if !fp.mapped && ctx.Err() == nil {
		e.mapFetched(fp)
	}
	if ref == "" {
		ref = fp.ref
	}
	return ref
}

// checkAscending returns an error when an hwm page's marks go down: the
// style asks for the records past the page's highest mark next, so the
// records an API sorted otherwise left for later pages, below that mark,
// would never be asked for (docs/pagination.md, "hwm"). Records without a
// mark or with a bad one are left out.
func (e *Engine) checkAscending(marks []markOf) error {
	if !paging.Of(e.Job.Pagination.Style).Traits().KeepsMark {
		return nil
	}
	prev := -1
	for i, m := range marks {
		if m.err != nil || m.mark == "" {
			continue
		}
		if prev >= 0 && paging.CompareMarks(m.mark, marks[prev].mark) < 0 {
			return fmt.Errorf("records are not in ascending order of %s: record %d has %s, after %s in record %d",
				e.Job.Pagination.Field, i, paging.Elide(m.mark, 40), paging.Elide(marks[prev].mark, 40), prev)
		}
		prev = i
	}
	return nil
}

// sleepCtx waits d or until ctx is done, and reports whether ctx is live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// noteCap warns, once per page that found it, that the API serves fewer
// records per page than pagination.size asks for.
func (e *Engine) noteCap(fp fetched) {
	if fp.capped > 0 && fp.err == nil {
		e.Logger.Warn(fmt.Sprintf("the API serves at most %d records per page (pagination.size is %d): going on in pages of %d; set pagination.size: %d to match",
			fp.capped, e.Job.Pagination.Size, fp.capped, fp.capped), "job", e.Job.Name)
	}
}

// markPath is the path of the mark in each record: the hwm field, the
// incremental field, or "" when the job keeps no mark.
func (e *Engine) markPath() string {
	switch {
	case paging.Of(e.Job.Pagination.Style).Traits().KeepsMark:
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
// (one that ended pagination or failed). ref is a mark the walk read before
// start (a continued run's highest), "" when none: the marks of a walk are
// of one kind, that of the mark it was asked from, else of ref, else of
// the first mark it reads, in page order (docs/pagination.md, "hwm").
func (e *Engine) pipeline(ctx context.Context, start paging.Position, win Window, to *paging.Position, limit int, ref string) <-chan fetched {
	workers := e.Job.Source.Concurrency
	if _, numbered := paging.Of(e.Job.Pagination.Style).(paging.Numbered); workers <= 1 || !numbered {
		return e.sequential(ctx, start, win, to, limit, ref)
	}
	return e.concurrent(ctx, start, win, to, limit, workers, ref)
}

// sequential follows pagination one page at a time: page N+1 is fetched
// while page N is mapped (mapStage) and page N-1 committed. A response
// fetched to prove a page's end is reused as the next page.
func (e *Engine) sequential(ctx context.Context, pos paging.Position, win Window, to *paging.Position, limit int, ref string) <-chan fetched {
	out := make(chan fetched) // unbuffered: one page fetched ahead of the mapping
	go func() {
		defer close(out)
		var ahead *contract.Response
		for n := 0; limit == 0 || n < limit; n++ {
			fp := e.fetchPage(ctx, pos, win, to, ahead, ref)
			ahead, fp.ahead = fp.ahead, nil
			if ref == "" {
				ref = fp.ref
			}
			e.noteCap(fp)
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
	return e.mapStage(ctx, out)
}

// concurrent fetches pages start, start+1, … with up to workers requests in
// flight and emits them in order. A page whose next position is not the
// one the workers assumed (the API was found to cap its pages, or an
// offset page came back short) ends the batch of requests in flight: the
// pages fetched past it are dropped unseen and fetching starts again from
// its next position, so nothing past a hole is ever emitted.
func (e *Engine) concurrent(ctx context.Context, start paging.Position, win Window, to *paging.Position, limit, workers int, ref string) <-chan fetched {
	out := make(chan fetched)
	go func() {
		defer close(out)
		pos, sent := start, 0
		for limit == 0 || sent < limit {
			sctx, cancel := context.WithCancel(ctx)
			rest := 0
			if limit > 0 {
				rest = limit - sent
			}
			batch := e.batch(sctx, pos, win, to, rest, workers, ref)
			var rebase *paging.Position
			for k := int64(1); ; k++ {
				fp, ok := <-batch
				if !ok {
					break
				}
				e.noteCap(fp)
				if ref == "" {
					ref = fp.ref
				}
				select {
				case out <- fp:
				case <-ctx.Done():
					cancel()
					drain(batch)
					return
				}
				sent++
				if fp.err != nil || fp.next.End {
					cancel()
					drain(batch)
					return
				}
				if want := e.stepPos(pos, k); fp.next != want {
					next := fp.next
					rebase = &next
					break
				}
			}
			cancel()
			drain(batch)
			if rebase == nil {
				return // the batch stopped at its fetch limit
			}
			pos = *rebase
		}
	}()
	return out
}

// stepPos is the position k pages after pos (page and offset styles), in
// pages of the size the API serves at pos.
func (e *Engine) stepPos(pos paging.Position, k int64) paging.Position {
	size := pos.Size()
	if size == 0 {
		size = e.Job.Pagination.Size
	}
	return paging.Position{At: paging.Of(e.Job.Pagination.Style).(paging.Numbered).Ahead(pos.At, k, size)}
}

// batch fetches pages start, start+1, … with up to workers requests in
// flight and emits them in order. It stops issuing requests past a page
// that ended pagination as soon as one is seen. Until the walk has read a
// mark (ref, win.From: both ""), a worker cannot know the kind of the
// walk's marks: it leaves its page unmapped, and the page's marks are read
// again in the kind of the walk's first mark when it is emitted (keepKind).
func (e *Engine) batch(ctx context.Context, start paging.Position, win Window, to *paging.Position, limit, workers int, ref string) <-chan fetched {
	out := make(chan fetched)
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
				fp := e.fetchPage(ctx, e.stepPos(start, idx), win, to, nil, ref)
				fp.ahead = nil // the next page is fetched by its own worker
				if ctx.Err() == nil && (win.From != "" || ref != "" || e.markPath() == "") {
					e.mapFetched(&fp)
				}
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
		// The walk's reference mark as pages are emitted; the workers keep
		// the one the walk started with (ref), never this one, which only
		// this goroutine reads and writes.
		walkRef := ref
		for r := range results {
			pending[r.idx] = r.fp
			for {
				fp, ok := pending[next]
				if !ok {
					break
				}
				delete(pending, next)
				walkRef = e.keepKind(ctx, &fp, walkRef)
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

// drain receives from c until it is closed: once it returns, the
// goroutines that send on c have stopped (none outlives the run; the
// engine's next Run would race a page still being mapped).
func drain[T any](c <-chan T) {
	for range c {
	}
}

// fetchErr names the page whose fetch failed with err: "fetch WHERE: err",
// unless err names it already (a next URL is the page's position and the
// source's own error starts with it), so the request is named once.
func fetchErr(where, why string, err error) error {
	if strings.Contains(err.Error(), where) {
		if why == "" {
			return err
		}
		return fmt.Errorf("fetch%s: %w", why, err)
	}
	return fmt.Errorf("fetch %s%s: %w", where, why, err)
}
