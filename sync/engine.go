package sync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tidwall/gjson"
)

// Options select what Engine.Run does.
type Options struct {
	Kind      string        // KindRun (default) or KindReplay
	Resume    bool          // only continue an unfinished run; ErrNothingToResume otherwise
	Restart   bool          // abandon an unfinished run and start over
	From, To  string        // replay range, in the style's terms (To optional)
	MaxPages  int           // stop cleanly after this many pages (0: no limit)
	TimeLimit time.Duration // stop cleanly after the page in progress once elapsed, having committed at least one (0: none)
}

// Result is what a run did; it is the --json object of run/resume/replay.
type Result struct {
	Job        string `json:"job"`
	RunID      int64  `json:"run_id"`
	Kind       string `json:"kind"`
	Status     string `json:"status"` // completed, partial, interrupted, failed
	Pages      int64  `json:"pages"`
	Records    int64  `json:"records"`
	Inserted   int64  `json:"inserted"`
	Updated    int64  `json:"updated"`
	Unchanged  int64  `json:"unchanged"`
	Skipped    int64  `json:"skipped"`
	Checkpoint string `json:"checkpoint"`
	HWM        string `json:"hwm"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error"`
	ExitCode   int    `json:"exit_code"`
	Resumed    bool   `json:"resumed"`
}

// PageEvent is reported after each committed page.
type PageEvent struct {
	RunID    int64
	Position string // described for people
	Records  int
	Counts   Counts
	Skipped  int
	Elapsed  time.Duration
	Total    Counts // run totals so far
	Pages    int64  // run pages so far
	TotalPgs int64  // total pages when the API tells, else 0
}

// Engine syncs one job: it owns the order spec → fetch → page → records →
// sink transaction → checkpoint commit.
type Engine struct {
	Job      *Job
	Store    Store
	OpenSink func(ctx context.Context) (Sink, error)
	Source   PageSource // fetches the pages: source/http's Fetcher in the binary
	Logger   *slog.Logger
	// OnPage, when set, is called after each committed page.
	OnPage func(PageEvent)
	// OnStart, when set, is called once the run is picked, before its
	// first page, with its id and, for a continued run, its totals so far
	// (Position, Records and Elapsed are zero).
	OnStart func(PageEvent)
	// PageLogLevel is the level of the "page committed" line logged for
	// each page. Defaults to slog.LevelInfo (the zero value); the command
	// line lowers it to debug while a progress bar shows the pages. The
	// run's summary line ("run finished") is always INFO.
	PageLogLevel slog.Level
	// Failpoint, when set, is called at each durable step of a page with its
	// name ("fetched", "target-committed", "checkpoint-committed"); tests
	// use it to crash the process at that point.
	Failpoint func(step string)

	validator RowValidator // the sink's, when it has one; set by begin
}

// runState is the state of the run in progress.
type runState struct {
	info    *RunInfo
	pos     Position
	to      *Position
	seen    map[string]bool
	prev    string // hash of the previous committed page
	resumed bool   // an unfinished run is being continued
	hwm     string // job's saved mark
	future  futureMarks
	total   Counts
	skipped int64
	pages   int64
	records int64
}

// Run runs the job as o says. The returned Result is never nil once the lock
// was taken; err carries the exit code (ExitCode).
func (e *Engine) Run(ctx context.Context, o Options) (*Result, error) {
	started := time.Now()
	job := e.Job
	if o.Kind == "" {
		o.Kind = KindRun
	}
	res := &Result{Job: job.Name, Kind: o.Kind, Status: RunFailed}
	unlock, err := e.Store.Lock(ctx, job.Name)
	if err != nil {
		return res, err
	}
	defer unlock()
	if qc, ok := e.Store.(interface{ QuickCheck(context.Context) error }); ok {
		if err := qc.QuickCheck(ctx); err != nil {
			return res, err
		}
	}
	// The database reads before the first page (the target table's state)
	// can wait on a lock as a page write can: they get the same grace after
	// a signal or the time limit.
	var limitAt time.Time
	if o.TimeLimit > 0 {
		limitAt = started.Add(o.TimeLimit)
	}
	bctx, stopBegin := writeContext(ctx, limitAt, WriteGrace)
	rs, sink, err := e.begin(bctx, o)
	stopped, cancelled := writeStopped(bctx)
	stopBegin()
	if err != nil {
		return e.beginFailed(ctx, res, started, stopped, cancelled, err)
	}
	defer sink.Close()
	res.RunID, res.Kind = rs.info.ID, rs.info.Kind
	res.Resumed = rs.resumed
	if e.OnStart != nil {
		e.OnStart(PageEvent{RunID: rs.info.ID, Total: rs.total, Pages: rs.pages})
	}
	log := e.Logger.With("job", job.Name, "run_id", rs.info.ID)
	status, runErr := e.loop(ctx, o, rs, sink, log, started)

	// Record how the run ended, even when ctx was cancelled.
	bg := context.WithoutCancel(ctx)
	msg := ""
	if runErr != nil && status == RunFailed {
		msg = job.Secrets.Redact(runErr.Error())
	}
	if status != RunCompleted { // a completing page already marked the run
		if err := e.Store.FinishRun(bg, rs.info.ID, status, msg, ""); err != nil && runErr == nil {
			runErr, status = err, RunFailed
		}
	}
	if rs.future.n > 0 {
		log.Warn("records dated more than max_future after the run's start were synced but do not move the saved mark",
			"records", rs.future.n, "furthest", rs.future.furthest, "max_future", e.maxFuture().String())
	}
	res.Status = status
	res.Pages, res.Records, res.Skipped = rs.pages, rs.records, rs.skipped
	res.Inserted, res.Updated, res.Unchanged = rs.total.Inserted, rs.total.Updated, rs.total.Unchanged
	res.Checkpoint = rs.pos.Describe(job.Pagination.Style, job.Secrets)
	res.HWM = rs.hwm
	res.DurationMS = time.Since(started).Milliseconds()
	if status == RunInterrupted {
		runErr = ErrInterrupted
	}
	if runErr != nil {
		res.Error = job.Secrets.Redact(runErr.Error())
	}
	res.ExitCode = ExitCode(runErr)
	log.Info("run finished", "status", status, "pages", rs.pages, "records", rs.records,
		"inserted", rs.total.Inserted, "updated", rs.total.Updated, "unchanged", rs.total.Unchanged,
		"skipped", rs.skipped, "checkpoint", res.Checkpoint, "ms", res.DurationMS)
	return res, runErr
}

// begin picks the run to continue or starts a new one, and opens the sink.
func (e *Engine) begin(ctx context.Context, o Options) (*runState, Sink, error) {
	job := e.Job
	pg := &pager{job: job, src: e.Source, log: e.Logger}
	js, err := e.Store.Job(ctx, job.Name)
	if err != nil {
		return nil, nil, err
	}
	run, err := e.Store.Unfinished(ctx, job.Name)
	if err != nil {
		return nil, nil, err
	}
	var from, to *Position
	if o.Kind == KindReplay {
		p, err := ParsePosition(job.Pagination.Style, o.From)
		if err != nil {
			return nil, nil, Errorf(ExitUsage, "replay --from: %v", err)
		}
		from = &p
		if o.To != "" {
			p, err := ParsePosition(job.Pagination.Style, o.To)
			if err != nil {
				return nil, nil, Errorf(ExitUsage, "replay --to: %v", err)
			}
			to = &p
			if st := job.Pagination.Style; styleOf(st).traits().ordered && lastBefore(st, *from, *from, p) {
				return nil, nil, Errorf(ExitUsage, "replay --to %s comes before --from %s", o.To, o.From)
			}
		}
	}
	switch {
	case o.Resume && run == nil:
		return nil, nil, ErrNothingToResume
	case o.Resume:
	case o.Kind == KindReplay && run != nil && (run.Kind != KindReplay || run.From != o.From || run.To != o.To):
		e.Logger.Warn("abandoning the unfinished run to start the replay", "job", job.Name, "run_id", run.ID)
		run = nil
	case o.Restart && run != nil:
		e.Logger.Info("abandoning the unfinished run (--restart)", "job", job.Name, "run_id", run.ID)
		run = nil
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
	fresh := false
	if o.Kind == KindRun {
		if run, fresh, err = e.startOver(ctx, o, sink, js, run, cur); err != nil {
			sink.Close()
			return nil, nil, err
		}
	}
	e.validator, _ = sink.(RowValidator)
	if job.Infer && len(js.Columns) > 0 {
		job.Table.Columns = append([]Column(nil), js.Columns...)
	}
	if !job.Infer || len(job.Table.Columns) > 0 {
		if err := sink.Prepare(ctx, &job.Table); err != nil {
			sink.Close()
			return nil, nil, err
		}
	}

	if run == nil {
		if err := e.abandonUnfinished(ctx); err != nil {
			sink.Close()
			return nil, nil, err
		}
	}

	rs := &runState{seen: map[string]bool{}, hwm: js.HWM, to: to}
	if run != nil {
		if err := e.continueRun(ctx, run, rs, cur); err != nil {
			sink.Close()
			return nil, nil, err
		}
		return rs, sink, nil
	}

	info := &RunInfo{Job: job.Name, Kind: o.Kind, Status: RunRunning, StartedAt: time.Now().UTC(), Identity: cur.Encode()}
	if inc := job.Incremental; inc != nil && o.Kind == KindRun {
		w, err := e.startMark(js.HWM, inc.Initial, inc.Overlap)
		if err != nil {
			sink.Close()
			return nil, nil, Errorf(ExitUsage, "incremental: %v", err)
		}
		info.Window = w
	}
	feed := ""
	if job.Pagination.Continue && from == nil && !fresh {
		if feed, err = e.feedPosition(ctx, js); err != nil {
			sink.Close()
			return nil, nil, err
		}
	}
	switch {
	case from != nil:
		rs.pos = *from
		info.From, info.To = o.From, o.To
	case feed != "":
		p, err := DecodePosition(feed)
		if err != nil {
			sink.Close()
			return nil, nil, err
		}
		p.End = false
		rs.pos = p
	default:
		m := ""
		if styleOf(job.Pagination.Style).traits().keepsMark {
			if m, err = e.startMark(js.HWM, job.Pagination.Initial, job.Pagination.Overlap); err != nil {
				sink.Close()
				return nil, nil, Errorf(ExitUsage, "pagination: %v", err)
			}
		}
		rs.pos = pg.start(m)
	}
	info.Checkpoint = rs.pos.Encode()
	id, err := e.Store.StartRun(ctx, info)
	if err != nil {
		sink.Close()
		return nil, nil, err
	}
	info.ID = id
	rs.info = info
	e.Logger.Info("starting run", "job", job.Name, "run_id", id, "kind", info.Kind,
		"from", rs.pos.Describe(job.Pagination.Style, job.Secrets), "window", info.Window)
	return rs, sink, nil
}

// continueRun takes up the unfinished run: reopens it (adopting the
// current walk when the state file predates identities) and restores its
// position, replay bound, loop guard and counts into rs.
func (e *Engine) continueRun(ctx context.Context, run *RunInfo, rs *runState, cur Identity) error {
	job := e.Job
	if err := e.Store.Reopen(ctx, run.ID); err != nil {
		return err
	}
	if run.Identity == "" { // a state file older than identities
		if err := e.Store.AdoptIdentity(ctx, job.Name, run.ID, cur.Encode()); err != nil {
			return err
		}
	}
	rs.info, rs.resumed = run, true
	var err error
	if rs.pos, err = DecodePosition(run.Checkpoint); err != nil {
		return err
	}
	if run.Kind == KindReplay && run.To != "" {
		if p, err := ParsePosition(job.Pagination.Style, run.To); err == nil {
			rs.to = &p
		}
	}
	pages, err := e.Store.Pages(ctx, run.ID)
	if err != nil {
		return err
	}
	for _, p := range pages {
		if pos, err := DecodePosition(p.Position); err == nil {
			rs.seen[loopKey(pos)] = true
		}
		rs.prev = p.Hash
	}
	rs.pages, rs.records, rs.skipped = run.Pages, run.Records, run.Skipped
	rs.total = Counts{Inserted: run.Inserted, Updated: run.Updated, Unchanged: run.Unchanged}
	e.Logger.Info("continuing unfinished run", "job", job.Name, "run_id", run.ID, "kind", run.Kind,
		"checkpoint", rs.pos.Describe(job.Pagination.Style, job.Secrets), "pages_done", run.Pages)
	return nil
}

// feedPosition returns where a continue: true job's new run starts: the last
// committed position of its latest run of kind run when that run completed,
// else "" (from the beginning). Replays are passed over: where one stopped
// says nothing about how far the feed itself was read.
func (e *Engine) feedPosition(ctx context.Context, js *JobState) (string, error) {
	last := js.LastRun
	if last != nil && last.Kind != KindRun {
		runs, err := e.Store.Runs(ctx, js.Name, 0)
		if err != nil {
			return "", err
		}
		last = nil
		for i := range runs {
			if runs[i].Kind == KindRun {
				last = &runs[i]
				break
			}
		}
	}
	if last == nil || last.Status != RunCompleted {
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
		n, err := CheckMark(initial)
		if err != nil {
			return "", fmt.Errorf("initial: %v", err)
		}
		return n, nil // the initial mark is not moved back
	}
	return SubtractOverlap(m, overlap)
}

// loopKey identifies a position for loop detection.
func loopKey(p Position) string {
	switch {
	case p.URL != "":
		return "u:" + p.URL
	case p.Cursor != "":
		return "c:" + p.Cursor
	}
	return ""
}

// loop commits the pages the pipeline fetches, in order, until the end, a
// limit, an interrupt or an error. It returns the run's status and the error
// that ended it.
func (e *Engine) loop(ctx context.Context, o Options, rs *runState, sink Sink, log *slog.Logger, started time.Time) (string, error) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := e.pipeline(pctx, rs.pos, rs.info.Window, rs.to, fetchLimit(e.Job, o.MaxPages, rs.pos, rs.to))
	committed := 0
	for {
		if ctx.Err() != nil {
			return RunInterrupted, nil
		}
		// A time limit stops after at least one page, so every run progresses.
		if o.MaxPages > 0 && committed >= o.MaxPages || o.TimeLimit > 0 && committed > 0 && time.Since(started) >= o.TimeLimit {
			log.Info("stopping: limit reached; the next run continues", "pages", committed)
			return RunPartial, nil
		}
		var fp fetched
		select {
		case f, ok := <-pages:
			if !ok { // the pipeline stopped at its fetch limit
				log.Info("stopping: limit reached; the next run continues", "pages", committed)
				return RunPartial, nil
			}
			fp = f
		case <-ctx.Done():
			return RunInterrupted, nil
		}
		if fp.err != nil {
			if ctx.Err() != nil {
				return RunInterrupted, nil
			}
			return RunFailed, fp.err
		}
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
				return stopped, nil
			}
			return RunFailed, err
		}
		committed++
		if done {
			return RunCompleted, nil
		}
	}
}

// commit moves one fetched page to its committed checkpoint: validate and
// map all records, upsert them in one target transaction, then commit the
// checkpoint and page row in the state file. It returns true when the page
// completed the run. Once the upsert starts the page is finished even if a
// signal arrives, unless the database does not answer within WriteGrace
// (see writeContext): then the page rolls back.
func (e *Engine) commit(ctx, wctx context.Context, rs *runState, sink Sink, log *slog.Logger, fp fetched) (bool, error) {
	job := e.Job
	style := job.Pagination.Style
	pos, next, resp := fp.pos, fp.next, fp.resp
	where := pos.Describe(style, job.Secrets)

	// 1. Validate and map every record (already done while fetching, unless
	// columns are inferred: inference must see the pages in order).
	ncols := len(job.Table.Columns)
	rows, dead := fp.rows, fp.dead
	if !fp.mapped {
		var err error
		if rows, dead, err = e.mapRecords(&fp, &job.Table, where); err != nil {
			return false, err
		}
	}
	for i := range dead {
		dead[i].RunID = rs.info.ID
	}

	// 2. Refuse loops before writing.
	if len(resp.Records) > 0 && fp.hash == rs.prev {
		return false, &Error{Code: ExitPermanent, Msg: fmt.Sprintf("page at %s repeats the previous page", where),
			Hint: "the API ignored the pagination parameter; check pagination.param"}
	}
	if !next.End {
		if k := loopKey(next); k != "" && (rs.seen[k] || k == loopKey(pos)) {
			return false, &Error{Code: ExitPermanent, Msg: fmt.Sprintf("pagination loop: %s came back a second time in this run", next.Describe(style, job.Secrets))}
		}
	}

	// 3. Upsert the page in one target transaction, under wctx: a signal
	// or the time limit cancels it only after WriteGrace.
	var cols []Column
	if len(job.Table.Columns) != ncols {
		PadRows(&job.Table, rows)
		if err := sink.Prepare(wctx, &job.Table); err != nil {
			return false, err
		}
		cols = append([]Column(nil), job.Table.Columns...)
	}
	var counts Counts
	if len(rows) > 0 {
		var err error
		if counts, err = sink.Upsert(wctx, &job.Table, rows); err != nil {
			return false, fmt.Errorf("write %s to %s: %w", where, job.Table.String(), err)
		}
	}
	e.failpoint("target-committed")
	skipped := int64(len(dead)) + counts.Dropped
	if counts.Dropped > 0 {
		log.Warn("the target database kept rows of the page out of the table although the write succeeded (a trigger returning NULL?); counted as skipped",
			"position", where, "rows", counts.Dropped)
	}

	// 4. Commit checkpoint and page row.
	pc := &PageCommit{RunID: rs.info.ID, Position: pos.Encode(), Next: next.Encode(), Records: int64(len(resp.Records)),
		Hash: fp.hash, Counts: counts, Skipped: skipped, Columns: cols, Dead: dead, Elapsed: time.Since(fp.t0)}
	kind := rs.info.Kind
	saveMax := e.savableMax(&fp, rs.info.StartedAt, &rs.future)
	switch {
	case styleOf(style).traits().keepsMark && kind == KindRun && CompareMarks(saveMax, rs.hwm) > 0:
		pc.HWM = saveMax
	case job.Incremental != nil && kind == KindRun:
		if CompareMarks(saveMax, rs.info.MaxMark) > 0 {
			pc.MaxMark = saveMax
			rs.info.MaxMark = saveMax
		}
		if saved := incrementalSavedMark(rs.info.MaxMark, rs.info.StartedAt); next.End && CompareMarks(saved, rs.hwm) > 0 {
			pc.HWM = saved
		}
	}
	if next.End {
		pc.FinishedAt = time.Now().UTC()
	}
	if err := e.Store.CommitPage(context.WithoutCancel(ctx), job.Name, pc); err != nil {
		return false, fmt.Errorf("commit checkpoint after %s: %w", where, err)
	}
	e.failpoint("checkpoint-committed")
	if pc.HWM != "" {
		rs.hwm = pc.HWM
	}
	if k := loopKey(pos); k != "" {
		rs.seen[k] = true
	}
	rs.prev, rs.pos = fp.hash, next
	rs.pages++
	rs.records += int64(len(resp.Records))
	rs.skipped += skipped
	rs.total.Add(counts)
	log.Log(ctx, e.PageLogLevel, "page committed", "position", where, "records", len(resp.Records), "inserted", counts.Inserted,
		"updated", counts.Updated, "unchanged", counts.Unchanged, "skipped", skipped, "ms", time.Since(fp.t0).Milliseconds())
	if e.OnPage != nil {
		e.OnPage(PageEvent{RunID: rs.info.ID, Position: where, Records: len(resp.Records), Counts: counts,
			Skipped: int(skipped), Elapsed: time.Since(fp.t0), Total: rs.total, Pages: rs.pages, TotalPgs: totalPages(job, resp)})
	}
	return next.End, nil
}

// mapRecords validates and converts every record of a fetched page to a row
// of t (adding inferred columns to t when the job infers them). Bad records
// become dead letters under on_bad_record: skip, and fail the page
// otherwise, naming the page, the record, the column and the reason.
func (e *Engine) mapRecords(fp *fetched, t *Table, where string) ([]Row, []DeadLetter, error) {
	job := e.Job
	rows := make([]Row, 0, len(fp.resp.Records))
	var dead []DeadLetter
	mapper := Mapper{Table: t, Infer: job.Infer}
	for i, rec := range fp.resp.Records {
		row, _, err := mapper.Map(i, rec)
		if err == nil && fp.marks != nil && fp.marks[i].err != nil {
			err = &BadRecord{Index: i, Column: e.markPath(), Reason: "mark " + fp.marks[i].err.Error()}
		}
		if err == nil {
			err = checkRow(e.validator, t, row, i)
		}
		if err != nil {
			var bad *BadRecord
			if !errors.As(err, &bad) {
				return nil, nil, err
			}
			if job.Target.OnBadRecord != "skip" {
				return nil, nil, &Error{Code: ExitPermanent, Msg: fmt.Sprintf("bad record on %s: %s", where, bad.Error()),
					Hint: "fix the source or the mapping, or set target.on_bad_record: skip to dead-letter such records"}
			}
			dead = append(dead, DeadLetter{Job: job.Name, Position: where, Index: i, Reason: bad.Error(), Raw: rec.Raw})
			continue
		}
		rows = append(rows, row)
	}
	return rows, dead, nil
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

func totalPages(job *Job, resp *Response) int64 {
	if p := job.Pagination.TotalPages; p != "" {
		return gjson.GetBytes(resp.Body, p).Int()
	}
	return totalPagesFromTotal(job, resp)
}

func wrapPermanent(context string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return fmt.Errorf("%s: %w", context, err)
	}
	return &Error{Code: ExitPermanent, Msg: context, Err: err}
}

func (e *Engine) failpoint(step string) {
	if e.Failpoint != nil {
		e.Failpoint(step)
	}
}
