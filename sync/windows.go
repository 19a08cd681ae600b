package sync

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Windows walked at once (incremental.concurrency, SPEC §9).
//
// A run split into windows (incremental.step) keeps one checkpoint: the
// lowest window not yet completed (Position.Win) at its next page, and in
// Position.Fly the windows after it that are in flight (each at its next
// page), those already completed, and how many were started. Every page
// commit stores that whole state in one state transaction, so a SIGKILL
// anywhere resumes every window in flight at its own page. The saved mark
// moves only over the contiguous prefix of completed windows, to the upper
// bound of the last of them; the run completes when every window has.

// windowState is the decoded Position.Fly.
type windowState struct {
	Pos     map[string]Position `json:"pos,omitempty"`  // windows after Win in flight: their next page
	Done    []int               `json:"done,omitempty"` // windows after Win completed
	Started int                 `json:"started"`        // windows started (the next to start)
}

// decodeWindows reads p.Fly; "" is no window in flight but p's own.
func decodeWindows(p Position) (windowState, error) {
	ws := windowState{Started: p.Win + 1}
	if p.Fly == "" {
		return ws, nil
	}
	if err := json.Unmarshal([]byte(p.Fly), &ws); err != nil {
		return ws, fmt.Errorf("decode windows in flight: %w", err)
	}
	return ws, nil
}

// windowRun is the state of a windowed run between page commits.
type windowRun struct {
	wins  []Window
	final string           // the mark saved when every window completed: the run's start, rounded down
	low   int              // lowest window not completed
	pos   map[int]Position // next page of each window in flight (low included while it is)
	done  map[int]bool     // completed windows above low
	next  int              // next window to start
	walks map[int]*walkState
	// label names window k in checkpoints (a child's parent key, "id=42");
	// nil for incremental windows.
	label func(k int) string
	// first is a window's first page (the style's start, Win 0).
	first Position
}

// walkState is what loop detection keeps per window.
type walkState struct {
	seen map[string]bool
	prev string
}

// newWindowRun restores a run's windows from its checkpoint pos.
func newWindowRun(e *Engine, wins []Window, pos Position) (*windowRun, error) {
	ws, err := decodeWindows(pos)
	if err != nil {
		return nil, err
	}
	w := &windowRun{wins: wins, low: min(pos.Win, len(wins)), pos: map[int]Position{}, done: map[int]bool{}, next: ws.Started, walks: map[int]*walkState{},
		first: e.windowStart(0)}
	if w.low < len(wins) {
		p := pos
		p.Fly = ""
		w.pos[w.low] = p
	}
	for k, p := range ws.Pos {
		i, err := strconv.Atoi(k)
		if err != nil || i <= w.low || i >= len(wins) {
			return nil, fmt.Errorf("decode windows in flight: bad window %q", k)
		}
		p.Win = i
		w.pos[i] = p
	}
	for _, i := range ws.Done {
		w.done[i] = true
	}
	// A window started whose first page was never committed starts again.
	for i := w.low + 1; i < min(w.next, len(wins)); i++ {
		if _, ok := w.pos[i]; !ok && !w.done[i] {
			w.pos[i] = e.windowStart(i)
		}
	}
	w.next = max(w.next, w.low+1)
	return w, nil
}

// windowStart is the first page of window k.
func (e *Engine) windowStart(k int) Position {
	p := (&pager{job: e.Job}).start("")
	p.Win = k
	return p
}

// checkpoint is the run's position: the lowest window in flight at its
// next page, the others in Fly; End once every window completed.
func (w *windowRun) checkpoint() Position {
	if w.low >= len(w.wins) {
		p := Position{Win: len(w.wins) - 1, End: true}
		if w.label != nil {
			p.Parent = w.label(p.Win)
		}
		return p
	}
	p, ok := w.pos[w.low]
	if !ok { // the lowest window is not started yet: its first page
		p = w.first
	}
	p.Win, p.Fly = w.low, ""
	if w.label != nil {
		p.Parent = w.label(w.low)
	}
	ws := windowState{Started: w.next, Pos: map[string]Position{}}
	for k, q := range w.pos {
		if k != w.low {
			q.Win, q.Parent = 0, "" // the key says which window
			ws.Pos[strconv.Itoa(k)] = q
		}
	}
	for k := range w.done {
		ws.Done = append(ws.Done, k)
	}
	sort.Ints(ws.Done)
	if len(ws.Pos) > 0 || len(ws.Done) > 0 || w.next > w.low+1 {
		b, _ := json.Marshal(ws)
		p.Fly = string(b)
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
	switch {
	case grew && w.low == len(w.wins):
		return w.final
	case grew:
		return w.wins[w.low-1].To
	}
	return ""
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
func (e *Engine) loopWindows(ctx context.Context, o Options, rs *runState, sink Sink, log *slog.Logger, started time.Time, wins []Window) (string, error) {
	w, err := newWindowRun(e, wins, rs.pos)
	if err != nil {
		return RunFailed, Errorf(ExitPermanent, "%w", err)
	}
	if rs.info.Kind == KindRun && e.Job.Parent == nil {
		w.final = markLike(rs.info.StartedAt.UTC().Truncate(time.Second), wins[0].From)
	}
	inFlight := 1
	switch {
	case e.Job.Parent != nil:
		w.label = func(k int) string { return e.parentDesc(wins[k].Parent) }
		inFlight = max(e.Job.Parent.Concurrency, 1)
	case e.Job.Incremental != nil:
		inFlight = max(e.Job.Incremental.Concurrency, 1)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan winPage)
	walk := func(k int, from Position) {
		w.walks[k] = &walkState{seen: map[string]bool{}}
		go func() {
			for fp := range e.pipeline(pctx, from, wins[k], nil, 0) {
				e.missingParent(&fp, wins[k])
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
	fill := func() {
		for len(w.pos) < inFlight && w.next < len(wins) {
			w.pos[w.next] = e.windowStart(w.next)
			walk(w.next, w.pos[w.next])
			w.next++
		}
	}
	fill()
	committed := 0
	for {
		wp, status, err := nextWindowPage(ctx, o, pages, e.windowName(wins), committed, started, log)
		if status != "" {
			return status, err
		}
		status, done, err := e.commitWindowPage(ctx, o, rs, sink, log, started, w, wp)
		if err != nil || status != "" {
			return status, err
		}
		committed++
		if done {
			return RunCompleted, nil
		}
		if wp.fp.next.End {
			if w.label != nil {
				// At debug: each page's line already names its parent.
				log.Debug("parent completed", "parent", wp.k+1, "of", len(wins), "key", w.label(wp.k), "pages", rs.pages)
			} else {
				log.Info("window completed", "window", wp.k+1, "of", len(wins), "from", wins[wp.k].From, "to", wins[wp.k].To)
			}
			delete(w.walks, wp.k)
			fill()
		}
	}
}

// nextWindowPage waits for the next fetched page of any window. It
// returns a status other than "" when the run stops instead: a limit
// reached (partial), an interrupt, or the page's fetch failed.
func nextWindowPage(ctx context.Context, o Options, pages <-chan winPage, name func(k int) string, committed int, started time.Time, log *slog.Logger) (winPage, string, error) {
	if o.MaxPages > 0 && committed >= o.MaxPages || o.TimeLimit > 0 && committed > 0 && time.Since(started) >= o.TimeLimit {
		log.Info("stopping: limit reached; the next run continues", "pages", committed)
		return winPage{}, RunPartial, nil
	}
	var wp winPage
	select {
	case wp = <-pages:
	case <-ctx.Done():
		return wp, RunInterrupted, nil
	}
	if wp.fp.err != nil {
		if ctx.Err() != nil {
			return wp, RunInterrupted, nil
		}
		// A page's error may name its window already, as the window's name
		// or as its position ("parent 3 (id=7), page 2").
		if n, msg := name(wp.k), wp.fp.err.Error(); !strings.Contains(msg, n) && !strings.Contains(msg, fmt.Sprintf("parent %d (", wp.k+1)) {
			return wp, RunFailed, fmt.Errorf("%s: %w", n, wp.fp.err)
		}
		return wp, RunFailed, wp.fp.err
	}
	return wp, "", nil
}

// commitWindowPage commits page wp of a windowed run: loop detection sees
// the page's own window, the checkpoint is every window's state after it.
// It returns a status other than "" when the write was stopped, and
// whether the run completed.
func (e *Engine) commitWindowPage(ctx context.Context, o Options, rs *runState, sink Sink, log *slog.Logger, started time.Time,
	w *windowRun, wp winPage) (string, bool, error) {
	fp := wp.fp
	fp.pos.Win = wp.k
	if w.label != nil {
		fp.pos.Parent = w.label(wp.k)
	}
	fp.windowTo = w.page(wp.k, &fp)
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
func (e *Engine) windowName(wins []Window) func(k int) string {
	return func(k int) string {
		if e.Job.Parent != nil {
			return "parent " + e.Job.Parent.Resource + " " + e.parentDesc(wins[k].Parent)
		}
		return fmt.Sprintf("window %d (%s to %s)", k+1, wins[k].From, wins[k].To)
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
		return Errorf(ExitUsage, "replay --from %q: a windowed job replays by mark: give a timestamp or a Unix time", o.From)
	}
	if o.To == "" {
		return nil
	}
	to, ok := markTime(o.To)
	if !ok {
		return Errorf(ExitUsage, "replay --to %q: a windowed job replays by mark: give a timestamp or a Unix time", o.To)
	}
	if !from.Before(to) {
		return Errorf(ExitUsage, "replay --to %s comes before --from %s", o.To, o.From)
	}
	return nil
}

// runWindowsOf is the windows of run: a run of kind run splits its window
// up to its start; a windowed job's replay splits [--from, --to) (to its
// start without --to). Any other run has its one window.
func runWindowsOf(job *Job, run *RunInfo) []Window {
	switch {
	case run.Kind == KindRun && run.Full: // a full pass is one window, from the first page
		return []Window{runWindow(job, run.Window, run.StartedAt)}
	case run.Kind == KindRun:
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
