package sync

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// A child run reads its parents from the parent table as it walks them,
// in key order, a batch at a time (docs/job-file.md, "Parent → child
// fan-out"): memory holds one batch and the parents in flight, and the
// state file only the checkpoint, which names the last parent started
// (paging.Flight.Last) and the row of every parent in flight
// (paging.Flight.Rows). A continued run reads on after the last parent
// started, with the filter its start fixed (paging.Flight.Since, and a
// replay's key range).

// parentBatch is how many parent rows one read of the parent table takes.
const parentBatch = 500

// parentWalk is the windowSource of a child run: window k is the k-th
// parent the run started.
type parentWalk struct {
	e      *Engine
	reader contract.ParentReader
	filter contract.ParentFilter // Since, From and To; After moves with the walk
	cols   []string
	since  string         // filter.Since as stored in the checkpoint ("" for none)
	rows   map[int]string // started windows not completed: their parent rows
	last   string         // the row of the last window started ("" before the first)
	buf    []string       // rows read ahead, not started
	eof    bool           // the table holds no row after buf
}

// newParentWalk sets up the walk of a child run with filter f; since is f.Since
// as the checkpoint stores it.
func (e *Engine) newParentWalk(sink contract.Sink, f contract.ParentFilter, since string) *parentWalk {
	return &parentWalk{e: e, reader: sink, filter: f, cols: e.Job.parentCols(), since: since, rows: map[int]string{}}
}

// after makes the walk read on after the parent row last.
func (w *parentWalk) after(last string) error {
	w.last = last
	if last == "" {
		w.filter.After = nil
		return nil
	}
	key, err := w.e.rowKey(last)
	if err != nil {
		return contract.Errorf(contract.Permanent, "parent %s: the checkpoint's last parent %s: %v", w.e.Job.Parent.Resource, last, err)
	}
	w.filter.After = key
	return nil
}

// has reports whether there is a window k: one more parent after the
// last started (k is the next window to start).
func (w *parentWalk) has(ctx context.Context, k int) (bool, error) {
	if _, ok := w.rows[k]; ok {
		return true, nil
	}
	if len(w.buf) == 0 && !w.eof {
		if err := w.fill(ctx); err != nil {
			return false, err
		}
	}
	return len(w.buf) > 0, nil
}

// fill reads the next batch of parent rows after the last one read.
func (w *parentWalk) fill(ctx context.Context) error {
	par := w.e.Job.Parent
	f := w.filter
	f.Limit = parentBatch
	rows, err := w.reader.ParentRows(ctx, &par.Table, w.cols, f)
	if err != nil {
		return wrapPermanent(fmt.Sprintf("parent %s: read %s", par.Resource, par.Table.String()), err)
	}
	w.eof = len(rows) < parentBatch
	for _, r := range rows {
		m := make(map[string]*string, len(w.cols))
		for k, c := range w.cols {
			m[c] = r[k]
		}
		b, _ := json.Marshal(m)
		w.buf = append(w.buf, string(b))
	}
	if n := len(w.buf); n > 0 {
		key, err := w.e.rowKey(w.buf[n-1])
		if err != nil {
			return contract.Errorf(contract.Permanent, "parent %s: %v", par.Resource, err)
		}
		w.filter.After = key
	}
	return nil
}

// start takes window k, the next parent (has(k) was true).
func (w *parentWalk) start(k int) Window {
	if r, ok := w.rows[k]; ok {
		return Window{Parent: r}
	}
	r := w.buf[0]
	w.buf = w.buf[1:]
	w.rows[k], w.last = r, r
	return Window{Parent: r}
}

// window is started window k.
func (w *parentWalk) window(k int) Window { return Window{Parent: w.rows[k]} }

// done forgets completed window k.
func (w *parentWalk) done(k int) { delete(w.rows, k) }

// save puts the walk's state into ws, for the checkpoint: the rows of the
// windows in flight (pos), the last started, the filter's start.
func (w *parentWalk) save(ws *paging.Flight, pos map[int]paging.Position, low int) {
	ws.Rows = map[string]string{}
	for k := range pos {
		ws.Rows[strconv.Itoa(k)] = w.rows[k]
	}
	if r, ok := w.rows[low]; ok {
		ws.Rows[strconv.Itoa(low)] = r
	}
	ws.Last, ws.Since = w.last, w.since
}

// restore takes the walk's state back from a checkpoint's ws.
func (w *parentWalk) restore(ws paging.Flight) error {
	for k, r := range ws.Rows {
		i, err := strconv.Atoi(k)
		if err != nil {
			return fmt.Errorf("decode parents in flight: bad window %q", k)
		}
		w.rows[i] = r
	}
	return w.after(ws.Last)
}

// parentFilter is the filter of a new child run, and its Since as stored:
// a replay's key range; for a run of kind run with parent_rows: changed,
// unless it starts fresh, the rows written since the start of the child's
// last completed run of kind run.
func (e *Engine) parentFilter(ctx context.Context, o Options, fresh bool) (contract.ParentFilter, string, error) {
	par := e.Job.Parent
	var f contract.ParentFilter
	var err error
	switch {
	case o.Kind == contract.KindReplay:
		if f.From, err = e.parentKey(o.From, "--from"); err != nil {
			return f, "", err
		}
		if o.To != "" {
			if f.To, err = e.parentKey(o.To, "--to"); err != nil {
				return f, "", err
			}
		}
	case par.Rows != ParentRowsAll && !fresh:
		if f.Since, err = e.lastCompletedStart(ctx); err != nil {
			return f, "", err
		}
	}
	since := ""
	if !f.Since.IsZero() {
		since = f.Since.Format(time.RFC3339Nano)
	}
	return f, since, nil
}

// continuedFilter is the filter of a continued child run: its replay
// range from the run, its Since from the checkpoint.
func (e *Engine) continuedFilter(run *contract.RunInfo, since string) (contract.ParentFilter, error) {
	var f contract.ParentFilter
	var err error
	if run.Kind == contract.KindReplay {
		if f.From, err = e.parentKey(run.From, "--from"); err != nil {
			return f, err
		}
		if run.To != "" {
			if f.To, err = e.parentKey(run.To, "--to"); err != nil {
				return f, err
			}
		}
	}
	if since != "" {
		if f.Since, err = time.Parse(time.RFC3339Nano, since); err != nil {
			return f, contract.Errorf(contract.Permanent, "the checkpoint's parent_rows start %q: %v", since, err)
		}
	}
	return f, nil
}

// holdsCols checks that a continued child run's parent rows in flight
// hold every parent column the job uses now: a {parent: COL} column added
// to the mapping since the run started (the mapping is not part of the
// walk) would otherwise be written NULL for them.
func (e *Engine) holdsCols(row string) error {
	if row == "" {
		return nil
	}
	g := gjson.Parse(row)
	for _, c := range e.Job.parentCols() {
		if !g.Get(EscapePath(c)).Exists() {
			return contract.Errorf(contract.Invalid, "the unfinished run took its parent rows before the job used the parent's column %s: run with --restart to take them again", c)
		}
	}
	return nil
}
