package sync

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	gosync "sync"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// Windows walked at once (incremental.concurrency; docs/pagination.md,
// "Windows: walking a since-window in parallel").
//
// A run split into windows (incremental.step) keeps one checkpoint: the
// lowest window not yet completed (Position.Win) at its next page, and in
// Position.Fly the windows after it that are in flight (each at its next
// page, the style's position), those already completed, and how many were
// started. Every page
// commit stores that whole state in one state transaction, so a SIGKILL
// anywhere resumes every window in flight at its own page. The saved mark
// moves only over the contiguous prefix of completed windows, to the upper
// bound of the last of them; the run completes when every window has.

// windowSource is the windows of a run: a fixed list (incremental
// windows) or a child's parents, read from the parent table as the run
// starts them (parentWalk).
type windowSource interface {
	// has reports whether window k exists; k is a started window or the
	// next one to start.
	has(ctx context.Context, k int) (bool, error)
	// start starts window k, the next one (has(k) was true), and returns it.
	start(k int) Window
	// window returns started window k.
	window(k int) Window
	// done forgets completed window k.
	done(k int)
}

// windowList is a run's fixed list of incremental windows.
type windowList []Window

func (l windowList) has(_ context.Context, k int) (bool, error) { return k < len(l), nil }
func (l windowList) start(k int) Window                         { return l[k] }
func (l windowList) window(k int) Window                        { return l[k] }
func (l windowList) done(int)                                   {}

// windowRun is the state of a windowed run between page commits.
type windowRun struct {
	src       windowSource
	parents   *parentWalk             // src when the run is a child's; nil otherwise
	exhausted bool                    // no window after the last started (settle)
	final     string                  // the mark saved when every window completed: the run's start, rounded down
	low       int                     // lowest window not completed
	pos       map[int]paging.Position // next page of each window in flight (low included while it is)
	done      map[int]bool            // completed windows above low
	next      int                     // next window to start
	walks     map[int]*walkState
	// label names window k in checkpoints (a child's parent key, "id=42");
	// nil for incremental windows.
	label func(k int) string
	// first is a window's first page (the style's start, Win 0).
	first paging.Position
}

// walkState is what loop detection keeps per window.
type walkState struct {
	seen map[string]bool
	prev string
}

// newWindowRun restores a run's windows from its checkpoint pos.
func newWindowRun(ctx context.Context, e *Engine, src windowSource, pos paging.Position) (*windowRun, error) {
	ws := pos.Windows()
	w := &windowRun{src: src, low: pos.Win, pos: map[int]paging.Position{}, done: map[int]bool{}, next: ws.Started, walks: map[int]*walkState{},
		first: e.windowStart(0)}
	if l, ok := src.(windowList); ok {
		w.low = min(w.low, len(l))
	}
	if pw, ok := src.(*parentWalk); ok {
		w.parents = pw
		if err := pw.restore(ws); err != nil {
			return nil, err
		}
	}
	// known reports whether started window i can be walked: in the list,
	// or its parent row in the checkpoint.
	known := func(i int) bool {
		if w.parents != nil {
			_, ok := w.parents.rows[i]
			return ok
		}
		ok, _ := src.has(ctx, i)
		return ok
	}
	if known(w.low) || w.low >= w.next {
		ok, err := src.has(ctx, w.low)
		if err != nil {
			return nil, err
		}
		if ok {
			src.start(w.low)
			p := pos
			p.Fly = nil
			w.pos[w.low] = p
		} else if w.parents != nil && w.low >= w.next {
			// The parent read after the last one started left the parent
			// table before this run took it: no window is started, and
			// settle finds the walk exhausted.
			return w, w.settle(ctx)
		}
	}
	if _, ok := w.pos[w.low]; !ok && w.low < w.next && w.parents != nil {
		return nil, fmt.Errorf("the checkpoint holds no parent row of parent %d in flight: run with --restart", w.low+1)
	}
	for i, at := range ws.Pos {
		if i <= w.low || !known(i) {
			return nil, fmt.Errorf("decode windows in flight: bad window %d", i)
		}
		w.pos[i] = paging.Position{At: at, Win: i}
	}
	for _, i := range ws.Done {
		w.done[i] = true
	}
	// A window started whose first page was never committed starts again.
	for i := w.low + 1; i < w.next; i++ {
		if _, ok := w.pos[i]; !ok && !w.done[i] && known(i) {
			w.pos[i] = e.windowStart(i)
		}
	}
	w.next = max(w.next, w.low+1)
	return w, w.settle(ctx)
}

// settle notes whether a window follows the last one started, once every
// started window has completed: the run then ends (checkpoint).
func (w *windowRun) settle(ctx context.Context) error {
	if w.low < w.next {
		return nil
	}
	ok, err := w.src.has(ctx, w.next)
	w.exhausted = !ok
	return err
}

// windowStart is the first page of window k.
func (e *Engine) windowStart(k int) paging.Position {
	p := (&pager{job: e.Job}).start("")
	p.Win = k
	return p
}

// checkpoint is the run's position: the lowest window in flight at its
// next page, the others in Fly; End once every window completed.
func (w *windowRun) checkpoint() paging.Position {
	if w.low >= w.next && w.exhausted {
		p := paging.Position{Win: w.next - 1, End: true}
		if w.parents != nil {
			p.Parent = w.parents.e.parentDesc(w.parents.last)
		}
		return p
	}
	p, ok := w.pos[w.low]
	if !ok { // the lowest window is not started yet: its first page
		p = w.first
	}
	p.Win, p.Fly = w.low, nil
	if w.label != nil {
		p.Parent = w.label(w.low)
	}
	ws := paging.Flight{Started: w.next, Pos: map[int]paging.At{}}
	for k, q := range w.pos {
		if k != w.low {
			ws.Pos[k] = q.At // the key says which window
		}
	}
	for k := range w.done {
		ws.Done = append(ws.Done, k)
	}
	sort.Ints(ws.Done)
	if w.parents != nil {
		w.parents.save(&ws, w.pos, w.low)
	}
	if len(ws.Pos) > 0 || len(ws.Done) > 0 || w.next > w.low+1 || w.parents != nil {
		p.Fly = &ws
	}
	return p
}

// page records the committed page fp of window k: its window moves to the
// page's next position, or completes. It returns the upper bound of the
// last window of the completed prefix when the prefix grew ("" otherwise).
func (w *windowRun) page(k int, fp *fetched) string {
	if !fp.next.End {
		p := fp.next
		p.Win, p.Parent = k, ""
		w.pos[k] = p
		return ""
	}
	delete(w.pos, k)
	w.done[k] = true
	grew := false
	for w.done[w.low] {
		delete(w.done, w.low)
		w.low++
		grew = true
	}
	l, ok := w.src.(windowList) // a child's windows have no marks
	switch {
	case !grew || !ok:
		return ""
	case w.low == len(l):
		return w.final
	}
	return l[w.low-1].To
}

// winPage is a fetched page of window k.
type winPage struct {
	k  int
	fp fetched
}

// loopWindows commits the pages of a windowed run with up to
// incremental.concurrency windows in flight, each fetched by its own
// pipeline in page order; pages of different windows are committed as
// they come. It returns the run's status and the error that ended it.
func (e *Engine) loopWindows(ctx context.Context, o Options, rs *runState, sink contract.Sink, log *slog.Logger, started time.Time, src windowSource) (string, error) {
	w, err := newWindowRun(ctx, e, src, rs.pos)
	if err != nil {
		return contract.RunFailed, wrapPermanent("restore the windows in flight", err)
	}
	if l, ok := src.(windowList); ok && rs.info.Kind == contract.KindRun && e.Job.Parent == nil && l[0].From != "" {
		// A run without a lower bound is one window and saves the highest
		// mark it read, as a run without step does: only a mark read tells
		// whether the marks are timestamps or numbers.
		w.final = markLike(rs.info.StartedAt.UTC().Truncate(time.Second), l[0].From)
	}
	inFlight := 1
	switch {
	case e.Job.Parent != nil:
		w.label = func(k int) string { return e.parentDesc(src.window(k).Parent) }
		inFlight = max(e.Job.Parent.Concurrency, 1)
	case e.Job.Incremental != nil:
		inFlight = max(e.Job.Incremental.Concurrency, 1)
	}
	pctx, cancel := context.WithCancel(ctx)
	// The walks and their pipelines end before this returns: none of
	// them outlives the run (a next Run of the engine would race them).
	var walks gosync.WaitGroup
	defer func() { cancel(); walks.Wait() }()
	pages := make(chan winPage)
	walk := func(k int, from paging.Position) {
		w.walks[k] = &walkState{seen: map[string]bool{}}
		win := src.window(k)
		walks.Add(1)
		go func() {
			defer walks.Done()
			ch := e.pipeline(pctx, from, win, nil, 0, "")
			defer func() {
				for range ch { // until the pipeline has stopped
				}
			}()
			for fp := range ch {
				e.parentNotFound(pctx, &fp, win, sink, log)
				e.missingParent(&fp, win)
				select {
				case pages <- winPage{k, fp}:
				case <-pctx.Done():
					return
				}
			}
		}()
	}
	for _, k := range slices.Sorted(maps.Keys(w.pos)) {
		walk(k, w.pos[k])
	}
	fill := func() error {
		for len(w.pos) < inFlight {
			ok, err := src.has(ctx, w.next)
			if err != nil || !ok {
				return err
			}
			src.start(w.next)
			w.pos[w.next] = e.windowStart(w.next)
			walk(w.next, w.pos[w.next])
			w.next++
		}
		return nil
	}
	if err := fill(); err != nil {
		return contract.RunFailed, err
	}
	if len(w.pos) == 0 {
		// Nothing in flight and nothing to start: no page will come.
		if !w.exhausted {
			return contract.RunFailed, fmt.Errorf("restore the windows in flight: no window %d in flight, and none to start: run with --restart", w.low+1)
		}
		// The walk ended before this run fetched a page: finishPass ends it.
		rs.pos = w.checkpoint()
		return "", nil
	}
	committed := 0
	for {
		wp, status, err := nextWindowPage(ctx, o, pages, e.windowName(src), committed, started, log)
		if status != "" {
			return status, err
		}
		status, done, err := e.commitWindowPage(ctx, o, rs, sink, log, started, w, wp)
		if err != nil || status != "" {
			return status, err
		}
		committed++
		if done {
			return contract.RunCompleted, nil
		}
		if wp.fp.next.End {
			if w.label != nil {
				// At debug: each page's line already names its parent.
				log.Debug("parent completed", "parent", wp.k+1, "key", w.label(wp.k), "pages", rs.pages)
			} else {
				win := src.window(wp.k)
				log.Info("window completed", "window", wp.k+1, "of", len(src.(windowList)), "from", win.From, "to", win.To)
			}
			delete(w.walks, wp.k)
			src.done(wp.k)
			if err := fill(); err != nil {
				return contract.RunFailed, err
			}
		}
	}
}

// nextWindowPage waits for the next fetched page of any window. It
// returns a status other than "" when the run stops instead: a limit
// reached (partial), an interrupt, or the page's fetch failed.
func nextWindowPage(ctx context.Context, o Options, pages <-chan winPage, name func(k int) string, committed int, started time.Time, log *slog.Logger) (winPage, string, error) {
	if o.MaxPages > 0 && committed >= o.MaxPages || o.TimeLimit > 0 && committed > 0 && time.Since(started) >= o.TimeLimit {
		log.Info("stopping: limit reached; the next run continues", "pages", committed)
		return winPage{}, contract.RunPartial, nil
	}
	var wp winPage
	select {
	case wp = <-pages:
	case <-ctx.Done():
		return wp, contract.RunInterrupted, nil
	}
	if wp.fp.err != nil {
		if ctx.Err() != nil {
			return wp, contract.RunInterrupted, nil
		}
		// A page's error may name its window already, as the window's name
		// or as its position ("parent 3 (id=7), page 2").
		if n, msg := name(wp.k), wp.fp.err.Error(); !strings.Contains(msg, n) && !strings.Contains(msg, fmt.Sprintf("parent %d (", wp.k+1)) {
			return wp, contract.RunFailed, fmt.Errorf("%s: %w", n, wp.fp.err)
		}
		return wp, contract.RunFailed, wp.fp.err
	}
	return wp, "", nil
}

// commitWindowPage commits page wp of a windowed run: loop detection sees
// the page's own window, the checkpoint is every window's state after it.
// It returns a status other than "" when the write was stopped, and
// whether the run completed.
func (e *Engine) commitWindowPage(ctx context.Context, o Options, rs *runState, sink contract.Sink, log *slog.Logger, started time.Time,
	w *windowRun, wp winPage) (string, bool, error) {
	fp := wp.fp
	fp.pos.Win = wp.k
	if w.label != nil {
		fp.pos.Parent = w.label(wp.k)
	}
	fp.windowTo = w.page(wp.k, &fp)
	if err := w.settle(ctx); err != nil {
		return contract.RunFailed, false, err
	}
	ckpt := w.checkpoint()
	fp.ckpt = &ckpt
	ws := w.walks[wp.k]
	rs.seen, rs.prev = ws.seen, ws.prev
	status, done, err := e.commitBounded(ctx, o, rs, sink, log, started, fp)
	ws.seen, ws.prev = rs.seen, rs.prev
	return status, done, err
}

// windowName returns how errors name window k of wins: "window 2 (FROM
// to TO)", or for a child "parent orders id=42".
func (e *Engine) windowName(src windowSource) func(k int) string {
	return func(k int) string {
		win := src.window(k)
		if e.Job.Parent != nil {
			return "parent " + e.Job.Parent.Resource + " " + e.parentDesc(win.Parent)
		}
		return fmt.Sprintf("window %d (%s to %s)", k+1, win.From, win.To)
	}
}

// windowed reports whether the job's runs are split into windows
// (incremental.step).
func (j *Job) windowed() bool { return j.Incremental != nil && j.Incremental.Step.Duration > 0 }

// replayMarks checks a windowed job's replay range: --from and --to are
// marks (timestamps or Unix times), --to after --from.
func replayMarks(o Options) error {
	from, ok := markTime(o.From)
	if !ok {
		return contract.Errorf(contract.Invalid, "replay --from %q: a windowed job replays by mark: give a timestamp or a Unix time", o.From)
	}
	if o.To == "" {
		return nil
	}
	to, ok := markTime(o.To)
	if !ok {
		return contract.Errorf(contract.Invalid, "replay --to %q: a windowed job replays by mark: give a timestamp or a Unix time", o.To)
	}
	if !from.Before(to) {
		return contract.Errorf(contract.Invalid, "replay --to %s comes before --from %s", o.To, o.From)
	}
	return nil
}

// runWindowsOf is the windows of run: a run of kind run splits its window
// up to its start; a windowed job's replay splits [--from, --to) (to its
// start without --to). Any other run has its one window.
func runWindowsOf(job *Job, run *contract.RunInfo) []Window {
	switch {
	case run.Kind == contract.KindRun && run.Full: // a full pass is one window, from the first page
		w := runWindow(job, run.Window, run.StartedAt)
		if job.sweepsDeletes() {
			// A record changed during the pass moves past an upper bound:
			// a bounded walk would not list it, and its row would be swept
			// (docs/deletions.md, "Full passes and end_param").
			w.To = ""
		}
		return []Window{w}
	case run.Kind == contract.KindRun:
		return runWindows(job, run.Window, run.StartedAt)
	case job.windowed():
		wins := runWindows(job, run.From, run.StartedAt)
		if run.To == "" {
			return wins
		}
		to, _ := markTime(run.To)
		var out []Window
		for _, w := range wins {
			if lo, ok := markTime(w.From); ok && !lo.Before(to) {
				break
			}
			if hi, ok := markTime(w.To); ok && hi.After(to) {
				w.To = run.To
			}
			out = append(out, w)
		}
		if len(out) == 0 {
			out = []Window{{From: run.From, To: run.To}}
		}
		return out
	}
	return []Window{runWindow(job, run.Window, run.StartedAt)}
}
