package sync

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/failpoint"
	"github.com/idemsync/idemsync/sync/paging"
)

// begin picks the run to continue or starts a new one, and opens the sink.
func (e *Engine) begin(ctx context.Context, o Options) (*runState, contract.Sink, error) {
	job := e.Job
	js, err := e.Store.Job(ctx, job.Name)
	if err != nil {
		return nil, nil, err
	}
	run, err := e.Store.Unfinished(ctx, job.Name)
	if err != nil {
		return nil, nil, err
	}
	if o.From, err = e.sealTyped(o, o.From, "--from"); err != nil {
		return nil, nil, err
	}
	if o.To, err = e.sealTyped(o, o.To, "--to"); err != nil {
		return nil, nil, err
	}
	from, to, err := e.replayRange(o)
	if err != nil {
		return nil, nil, err
	}
	if run, err = e.pickRun(o, run); err != nil {
		return nil, nil, err
	}

	cur := job.Identity()
	if run != nil {
		if err := e.checkUnfinished(run, cur); err != nil {
			return nil, nil, err
		}
	}

	// The target is reached before the run is recorded, so an unreachable
	// database leaves the checkpoint untouched.
	sink, err := e.OpenSink(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := e.probeSink(ctx, sink); err != nil {
		sink.Close()
		return nil, nil, err
	}
	rs, err := e.startOrContinue(ctx, o, sink, js, run, cur, from, to)
	if err != nil {
		sink.Close()
		return nil, nil, err
	}
	return rs, sink, nil
}

// sealTyped returns a replay's --from or --to v, a cursor or a URL, as a
// position the API gave is stored: with the job's secrets in it sealed,
// whether v holds them as written or as the markers status shows
// (docs/job-file.md, "What is and is not a secret"), so that the run
// stores no secret and meets the positions it walks.
func (e *Engine) sealTyped(o Options, v, flag string) (string, error) {
	job := e.Job
	if o.Kind != contract.KindReplay || v == "" || job.Parent != nil || job.windowed() {
		return v, nil
	}
	if st := job.Pagination.Style; st != paging.StyleCursor && st != paging.StyleLink {
		return v, nil
	}
	raw, err := job.Secrets.Unseal(v)
	if err != nil {
		return "", contract.Errorf(contract.Invalid, "replay %s: %v", flag, err)
	}
	return job.Secrets.Seal(raw), nil
}

// replayRange parses a replay's --from and --to (nil, nil for other kinds).
// It fails with Invalid on a position the style cannot read or a --to
// before --from.
func (e *Engine) replayRange(o Options) (from, to *paging.Position, err error) {
	job := e.Job
	if o.Kind != contract.KindReplay {
		return nil, nil, nil
	}
	if job.Parent != nil { // parent keys, bounding the parents the walk reads
		lo, err := e.parentKey(o.From, "--from")
		if err != nil {
			return nil, nil, err
		}
		if o.To != "" {
			hi, err := e.parentKey(o.To, "--to")
			if err != nil {
				return nil, nil, err
			}
			if keyBefore(hi, lo) {
				return nil, nil, contract.Errorf(contract.Invalid, "replay --to %s comes before --from %s", o.To, o.From)
			}
		}
		return nil, nil, nil
	}
	if job.windowed() {
		return nil, nil, replayMarks(o)
	}
	p, err := paging.ParsePosition(job.Pagination.Style, o.From)
	if err != nil {
		return nil, nil, contract.Errorf(contract.Invalid, "replay --from: %v", err)
	}
	if err := e.beforeStart(p, "--from", o.From); err != nil {
		return nil, nil, err
	}
	from = &p
	if o.To != "" {
		p, err := paging.ParsePosition(job.Pagination.Style, o.To)
		if err != nil {
			return nil, nil, contract.Errorf(contract.Invalid, "replay --to: %v", err)
		}
		if err := e.beforeStart(p, "--to", o.To); err != nil {
			return nil, nil, err
		}
		to = &p
		if a, ok := from.At.(paging.HWMAt); ok {
			// A timestamp and a number have no order: never compared as
			// text (docs/pagination.md, "hwm").
			if b, _ := p.At.(paging.HWMAt); paging.MarkKind(a.Mark) != paging.MarkKind(b.Mark) {
				return nil, nil, contract.Errorf(contract.Invalid, "replay --from %s is a %s and --to %s a %s: give two marks of the kind the API writes",
					o.From, paging.MarkKind(a.Mark), o.To, paging.MarkKind(b.Mark))
			}
		}
		if st := job.Pagination.Style; paging.Of(st).Traits().Ordered && paging.LastBefore(st, *from, *from, p) {
			return nil, nil, contract.Errorf(contract.Invalid, "replay --to %s comes before --from %s", o.To, o.From)
		}
	}
	return from, to, nil
}

// beforeStart refuses a replay page number before the job's first page
// (pagination.start): no page of the walk has it.
func (e *Engine) beforeStart(p paging.Position, flag, v string) error {
	pg := e.Job.Pagination
	if pg.Style != paging.StylePage || pg.Start == nil || paging.PageOf(p.At).Page >= *pg.Start {
		return nil
	}
	return contract.Errorf(contract.Invalid, "replay %s %s comes before the first page, %d (pagination.start)", flag, v, *pg.Start)
}

// keyBefore reports whether the parent key a sorts before b, column by
// column, as far as Go can tell the database's order: numbers and times.
// Text (whose order is the database's collation) and anything else stop
// the comparison with false, so a range is never refused on a guess.
func keyBefore(a, b []any) bool {
	for i := range min(len(a), len(b)) {
		var c int
		switch x := a[i].(type) {
		case int64:
			y, ok := b[i].(int64)
			if !ok {
				return false
			}
			c = cmp.Compare(x, y)
		case float64:
			y, ok := b[i].(float64)
			if !ok {
				return false
			}
			c = cmp.Compare(x, y)
		case time.Time:
			y, ok := b[i].(time.Time)
			if !ok {
				return false
			}
			c = x.Compare(y)
		default:
			return false
		}
		if c != 0 {
			return c < 0
		}
	}
	return false
}

// pickRun decides whether the unfinished run (nil when none) is continued:
// it returns it, or nil when o starts over (a different replay, --restart).
// --resume without an unfinished run fails with ErrNothingToResume.
func (e *Engine) pickRun(o Options, run *contract.RunInfo) (*contract.RunInfo, error) {
	job := e.Job
	switch {
	case o.Resume && run == nil:
		return nil, contract.ErrNothingToResume
	case job.Parent != nil && run != nil && !streamed(run):
		e.Logger.Warn("abandoning the unfinished run: an earlier version began it with a copy of the parent rows, which this version no longer keeps; the new run walks the parent table",
			"job", job.Name, "run_id", run.ID)
		run = nil
	case o.Resume:
	case o.Kind == contract.KindReplay && run != nil && (run.Kind != contract.KindReplay || run.From != o.From || run.To != o.To):
		e.Logger.Warn("abandoning the unfinished run to start the replay", "job", job.Name, "run_id", run.ID)
		run = nil
	case o.Restart && run != nil:
		e.Logger.Info("abandoning the unfinished run (--restart)", "job", job.Name, "run_id", run.ID)
		run = nil
	case o.Full && o.Kind == contract.KindRun && run != nil && !run.Full:
		e.Logger.Info("abandoning the unfinished run to start a full pass (--full)", "job", job.Name, "run_id", run.ID)
		run = nil
	}
	return run, nil
}

// startOrContinue prepares the opened target and then continues run, or,
// when run is nil, abandons any unfinished run and records a new one. The
// caller closes sink when it fails.
func (e *Engine) startOrContinue(ctx context.Context, o Options, sink contract.Sink, js *contract.JobState, run *contract.RunInfo, cur Identity, from, to *paging.Position) (*runState, error) {
	job := e.Job
	fresh := false
	if err := e.targetProgress(ctx, sink, js); err != nil { // progress.go
		return nil, err
	}
	// A continued replay restores rows, so an empty target is expected and
	// proves nothing lost (docs/operations.md, "Replay").
	if o.Kind == contract.KindRun && (run == nil || run.Kind != contract.KindReplay) {
		var err error
		if run, fresh, err = e.startOver(ctx, o, sink, js, run, cur); err != nil {
			return nil, err
		}
	} else if err := e.replayOverLost(ctx, sink, js); err != nil {
		return nil, err
	}
	if job.Infer {
		saved, err := DecodeColumns(js.Columns)
		if err != nil {
			return nil, &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("job %s: the state's saved columns: %v", job.Name, err)}
		}
		if len(saved) > 0 {
			job.Table.Columns = saved
		}
	}
	if !job.Infer || len(job.Table.Columns) > 0 {
		if err := sink.Prepare(ctx, &job.Table); err != nil {
			return nil, err
		}
	}

	if run == nil {
		if err := e.abandonUnfinished(ctx); err != nil {
			return nil, err
		}
	}

	rs := &runState{seen: map[string]bool{}, hwm: js.HWM, to: to}
	if run != nil {
		if err := e.continueRun(ctx, run, rs, cur); err != nil {
			return nil, err
		}
		// A verify run checks the pages it reads: say that those committed
		// before it continued are not among them (docs/operations.md, "Verify").
		if o.Verify && run.Pages > 0 {
			e.Logger.Warn("--verify continues an unfinished run: the pages committed before it are not checked by this run; run --verify --restart (or replay --verify) checks every page",
				"job", job.Name, "run_id", run.ID, "pages_not_checked", run.Pages)
		}
	} else if err := e.startRun(ctx, o, sink, js, rs, cur, from, fresh); err != nil {
		return nil, err
	}
	if err := e.stampChanges(ctx, sink, rs); err != nil {
		return nil, err
	}
	return rs, nil
}

// replayOverLost makes the job's next run a full pass when a replay starts
// or continues over a target table that is missing or empty while the
// state file holds a saved mark or a feed position: the replay restores
// its range only, and the next run must not start from a mark or position
// that no longer describes the table (docs/operations.md, "Replay").
func (e *Engine) replayOverLost(ctx context.Context, sink contract.Sink, js *contract.JobState) error {
	if js.FullDue {
		return nil
	}
	why, err := e.targetLost(ctx, sink, js, nil)
	if err != nil || why == "" {
		return err
	}
	e.Logger.Warn(why+" while the state file holds progress: the replay restores its range only, so the job's next run is a full pass from the beginning",
		"job", e.Job.Name)
	return e.Store.DueFullPass(ctx, e.Job.Name)
}

// startRun records a new run starting where startPosition says and sets
// rs's run and position. The incremental window or start mark that cannot
// be read fails with Invalid.
func (e *Engine) startRun(ctx context.Context, o Options, sink contract.Sink, js *contract.JobState, rs *runState, cur Identity, from *paging.Position, fresh bool) error {
	job := e.Job
	info := &contract.RunInfo{Job: job.Name, Kind: o.Kind, Status: contract.RunRunning, StartedAt: failpoint.Now().UTC(), Identity: cur.Encode()}
	full, why := e.fullPass(o, js)
	if full {
		// A full pass has no lower bound: it starts where the very first
		// run would (from initial, or sending no mark; from the first page;
		// a child from its parent's every row).
		info.Full, fresh = true, true
		c := *js
		c.HWM, js = "", &c
		if why != "" {
			e.Logger.Info("this run is a full pass", "job", job.Name, "why", why)
		}
	}
	var err error
	if info.LiveBefore, err = e.liveBefore(ctx, o, info.Full, sink); err != nil {
		return err
	}
	if err := e.afterRefusal(ctx, info, js); err != nil {
		return err
	}
	var fly *paging.Flight
	var first string
	if job.Parent != nil {
		if fly, first, err = e.startChild(ctx, o, sink, info, fresh); err != nil {
			return err
		}
	}
	if inc := job.Incremental; inc != nil && o.Kind == contract.KindRun {
		w, err := e.startMark(js.HWM, inc.Initial, inc.Overlap)
		if err != nil {
			return contract.Errorf(contract.Invalid, "incremental: %v", err)
		}
		info.Window = w
	}
	if job.windowed() && o.Kind == contract.KindReplay {
		info.Window, info.From, info.To = o.From, o.From, o.To // the marks the replayed windows span
	}
	pos, err := e.startPosition(ctx, js, from, fresh)
	if err != nil {
		return err
	}
	rs.pos = pos
	switch {
	case job.Parent != nil && fly == nil:
		rs.pos = paging.Position{End: true, Parent: paging.NoParents}
		e.Logger.Info("no parent rows to walk", "job", job.Name, "parent", job.Parent.Resource, "parent_rows", job.Parent.Rows)
	case job.Parent != nil:
		rs.pos.Fly, rs.pos.Parent = fly, e.parentDesc(first)
	}
	if from != nil {
		info.From, info.To = o.From, o.To
	}
	info.Checkpoint = rs.pos.Encode()
	id, err := e.Store.StartRun(ctx, info)
	if err != nil {
		return err
	}
	info.ID = id
	rs.info = info
	e.Logger.Info("starting run", "job", job.Name, "run_id", id, "kind", info.Kind, "full_pass", info.Full,
		"from", rs.pos.Describe(job.Pagination.Style, job.Secrets), "window", info.Window)
	return nil
}

// startPosition is where a new run starts: a replay's --from, the feed's
// last position for a continue: true job (unless the target starts fresh),
// or the style's first position (from the saved mark for hwm style).
func (e *Engine) startPosition(ctx context.Context, js *contract.JobState, from *paging.Position, fresh bool) (paging.Position, error) {
	job := e.Job
	pg := &pager{job: job, src: e.Source, log: e.Logger}
	feed := ""
	if job.Pagination.Continue && from == nil && !fresh {
		var err error
		if feed, err = e.feedPosition(ctx, js); err != nil {
			return paging.Position{}, err
		}
	}
	switch {
	case from != nil:
		return *from, nil
	case feed != "":
		p, err := paging.DecodePosition(job.Pagination.Style, feed)
		if err != nil {
			return paging.Position{}, err
		}
		p.End = false
		return p, nil
	default:
		m := ""
		if paging.Of(job.Pagination.Style).Traits().KeepsMark {
			var err error
			if m, err = e.startMark(js.HWM, job.Pagination.Initial, job.Pagination.Overlap); err != nil {
				return paging.Position{}, contract.Errorf(contract.Invalid, "pagination: %v", err)
			}
		}
		return pg.start(m), nil
	}
}

// continueRun takes up the unfinished run: reopens it (adopting the
// current walk when the state file predates identities) and restores its
// position, replay bound, loop guard and counts into rs.
func (e *Engine) continueRun(ctx context.Context, run *contract.RunInfo, rs *runState, cur Identity) error {
	job := e.Job
	var err error
	if err := e.Store.Reopen(ctx, run.ID); err != nil {
		return err
	}
	if run.Identity == "" { // a state file older than identities
		if err := e.Store.AdoptIdentity(ctx, job.Name, run.ID, cur.Encode()); err != nil {
			return err
		}
	}
	rs.info, rs.resumed = run, true
	rs.proof.reason, rs.proof.saved = run.SweepSkipped, true
	if rs.pos, err = paging.DecodePosition(job.Pagination.Style, run.Checkpoint); err != nil {
		return err
	}
	if run.Kind == contract.KindReplay && run.To != "" && !job.windowed() {
		if p, err := paging.ParsePosition(job.Pagination.Style, run.To); err == nil {
			rs.to = &p
		}
	}
	pages, err := e.Store.Pages(ctx, run.ID)
	if err != nil {
		return err
	}
	for _, p := range pages {
		if pos, err := paging.DecodePosition(job.Pagination.Style, p.Position); err == nil {
			rs.seen[paging.LoopKey(pos)] = true
		}
		rs.prev = p.Hash
	}
	rs.pages, rs.records, rs.skipped = run.Pages, run.Records, run.Skipped
	rs.total = contract.Counts{Inserted: run.Inserted, Updated: run.Updated, Unchanged: run.Unchanged, Deleted: run.Deleted, Children: maps.Clone(run.Children)}
	if run.Pages > 0 { // what target.schema did on its pages before (schema.go)
		changes, err := e.Store.SchemaChanges(ctx, job.Name, 0)
		if err != nil {
			return err
		}
		rs.schema.continued(run, changes)
	}
	e.Logger.Info("continuing unfinished run", "job", job.Name, "run_id", run.ID, "kind", run.Kind,
		"checkpoint", rs.pos.Describe(job.Pagination.Style, job.Secrets), "pages_done", run.Pages)
	return nil
}

// feedPosition returns where a continue: true job's new run starts: the last
// committed position of its latest run of kind run when that run completed,
// else "" (from the beginning). Replays are passed over: where one stopped
// says nothing about how far the feed itself was read.
func (e *Engine) feedPosition(ctx context.Context, js *contract.JobState) (string, error) {
	last := js.LastRun
	if last != nil && last.Kind != contract.KindRun {
		runs, err := e.Store.Runs(ctx, js.Name, 0)
		if err != nil {
			return "", err
		}
		last = nil
		for i := range runs {
			if runs[i].Kind == contract.KindRun {
				last = &runs[i]
				break
			}
		}
	}
	if last == nil || last.Status != contract.RunCompleted {
		return "", nil
	}
	return last.Last, nil
}

// startMark returns the mark a new run starts from: the saved mark (or the
// initial one) minus overlap.
func (e *Engine) startMark(saved, initial, overlap string) (string, error) {
	m := saved
	if m == "" {
		if initial == "" {
			return "", nil
		}
		n, err := paging.CheckMark(initial)
		if err != nil {
			return "", fmt.Errorf("initial: %v", err)
		}
		return n, nil // the initial mark is not moved back
	}
	return paging.SubtractOverlap(m, overlap)
}
