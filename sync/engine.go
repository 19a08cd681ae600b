package sync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// Options select what Engine.Run does.
type Options struct {
	Kind      string        // KindRun (default) or KindReplay
	Resume    bool          // only continue an unfinished run; ErrNothingToResume otherwise
	Restart   bool          // abandon an unfinished run and start over
	From, To  string        // replay range, in the style's terms (To optional)
	MaxPages  int           // stop cleanly after this many pages (0: no limit)
	TimeLimit time.Duration // stop cleanly after the page in progress once elapsed, having committed at least one (0: none)
	Verify    bool          // compare stored mapped columns too and rewrite rows changed outside idemsync (Table.Verify)
	// Full makes a new run of kind run a full pass (run --full): no lower
	// bound, from the first page, and a sweep at its end (docs/deletions.md,
	// "incremental.full_every and run --full").
	Full bool
	// AllowMassDelete lets this run's sweep pass target.max_delete_ratio.
	AllowMassDelete bool
	// AllowCommand is the command that would let a refused sweep pass
	// (its file, --resource when the file has several), for the
	// refusal's message.
	AllowCommand string
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
	Deleted    int64  `json:"deleted"`
	Checkpoint string `json:"checkpoint"`
	HWM        string `json:"hwm"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error"`
	// ExitCode is the process exit code: the command line sets it from
	// the run's error (the engine knows classes, not codes).
	ExitCode int  `json:"exit_code"`
	Resumed  bool `json:"resumed"`
	// Sweep is "skipped" when the run is a full pass that cannot prove its
	// records absent, and SweepSkipped says why: its sweep deletes nothing
	// (docs/deletions.md, docs/operations.md). Both are omitted otherwise.
	Sweep        string `json:"sweep,omitempty"`
	SweepSkipped string `json:"sweep_skipped,omitempty"`
	// PendingDeletes, on a full pass whose sweep ran, is how many rows it
	// did not see but kept: the next proving pass removes those it misses
	// too (docs/deletions.md, "Two passes"). Omitted on other runs.
	PendingDeletes *int64 `json:"pending_deletes,omitempty"`
	// SchemaChanges are the columns the run's pages added or widened, and
	// SchemaDiscards what target.schema discarded in them, a continued
	// run's from its first page (docs/job-file.md, "The schema
	// contract"); omitted when none.
	SchemaChanges  []contract.SchemaChange  `json:"schema_changes,omitempty"`
	SchemaDiscards *contract.SchemaDiscards `json:"schema_discards,omitempty"`

	// Children is what the run did to each child table: rows inserted,
	// and rows deleted or marked (docs/job-file.md, "Child tables");
	// omitted when none.
	Children map[string]contract.ChildCounts `json:"children,omitempty"`
}

// SweepSkippedOutcome is Result.Sweep of a run whose sweep is skipped.
const SweepSkippedOutcome = "skipped"

// PageEvent is reported after each committed page.
type PageEvent struct {
	RunID    int64
	Position string // described for people
	Records  int
	Counts   contract.Counts
	Skipped  int
	Elapsed  time.Duration
	Total    contract.Counts // run totals so far
	Pages    int64           // run pages so far
	// RunRecords and RunSkipped are the run's records and skipped so far
	// (a second signal's --json object reports them: cmd/hardexit.go).
	RunRecords, RunSkipped int64
	// Checkpoint and HWM are where the next page starts and the job's
	// saved mark, as the run object says them (a second signal's object
	// reports them).
	Checkpoint, HWM string
	TotalPgs        int64 // total pages when the API tells, else 0
}

// Engine syncs one job: it owns the order spec → fetch → page → records →
// sink transaction → checkpoint commit.
type Engine struct {
	Job *Job
	// Store is the state store: the engine's part of it (contract.RunStore).
	Store    contract.RunStore
	OpenSink func(ctx context.Context) (contract.Sink, error)
	// Fenced, when set, is the state store as a holder of leases with
	// fencing tokens: a sink that can fence refuses the pages of a holder
	// another took over (docs/guarantees.md, "Fenced targets").
	Fenced contract.FencedStore
	// JoinState: the state lives in the target's database, so each page's
	// checkpoint commits in its rows' transaction (docs/guarantees.md,
	// "One transaction per page"). It needs Fenced.
	JoinState bool
	Source    contract.PageSource // fetches the pages: source/http's Fetcher in the binary
	Logger    *slog.Logger
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
	// OnSweep, when set, is called after a sweep committed with the rows
	// it deleted or marked.
	OnSweep func(deleted int64)
	// OnSweepSkipped, when set, is called when a full pass ends with its
	// sweep skipped, with the reason.
	OnSweepSkipped func(reason string)

	validator contract.RowValidator // the sink's, when it has one; set by begin

	// The target's progress markers (progress.go), set as the run starts:
	// the sink that keeps them (nil: none), the last marker written (or
	// the state's, when higher), the target's own as read or last written
	// (held: what a page that wrote nothing records), and why the target
	// is behind the state's ("" when it is not).
	progressor contract.Progressor
	progress   int64
	held       int64
	behind     string
}

// runState is the state of the run in progress.
type runState struct {
	info    *contract.RunInfo
	pos     paging.Position
	to      *paging.Position
	seen    map[string]bool
	prev    string // hash of the previous committed page
	resumed bool   // an unfinished run is being continued
	refused bool   // the run's sweep was refused: it ended for good
	pending *int64 // rows the pass's sweep missed but kept (nil: it did not sweep)
	hwm     string // job's saved mark
	future  futureMarks
	total   contract.Counts
	skipped int64
	pages   int64
	records int64
	proof   proofState        // what voids the pass's proof of absence (proof.go)
	walk    walkKeys          // the distinct keys of the walk in progress (distinct.go)
	walks   map[int]*walkKeys // those of each window's walk in flight, by window (distinct.go)
	hashes  passHashes        // the hashes of the keys of the pages committed (passkeys.go)
	schema  schemaRun         // what target.schema did in the run (schema.go)
}

// Run runs the job as o says. The returned Result is never nil once the lock
// was taken; err carries the class of the failure (contract.ClassOf).
func (e *Engine) Run(ctx context.Context, o Options) (*Result, error) {
	started := time.Now()
	job := e.Job
	if o.Kind == "" {
		o.Kind = contract.KindRun
	}
	job.Table.Verify = o.Verify
	res := &Result{Job: job.Name, Kind: o.Kind, Status: contract.RunFailed}
	// A signal while the state file is locked or checked (a busy file
	// holds both up) interrupts the run: exit 130, not a damaged file.
	unlock, err := e.Store.Lock(ctx, job.Name)
	if err != nil {
		return e.beginFailed(ctx, res, started, "", false, err)
	}
	defer unlock()
	if err := e.Store.Check(ctx); err != nil {
		return e.beginFailed(ctx, res, started, "", false, err)
	}
	if job.Table.Now, err = e.timeLine(ctx); err != nil {
		return e.beginFailed(ctx, res, started, "", false, err)
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
		e.OnStart(PageEvent{RunID: rs.info.ID, Total: rs.total, Pages: rs.pages, RunRecords: rs.records, RunSkipped: rs.skipped,
			Checkpoint: rs.pos.Describe(job.Pagination.Style, job.Secrets), HWM: rs.hwm})
	}
	log := e.Logger.With("job", job.Name, "run_id", rs.info.ID)
	// The state writes of the run's end wait at most WriteGrace after a
	// signal, as a page write does, and WriteGrace after they begin once
	// the time limit passed (endCtx).
	ectx, stopEnd := writeContext(ctx, time.Time{}, WriteGrace)
	defer stopEnd()
	endCtx := func() (context.Context, func()) { return limitContext(ectx, limitAt, WriteGrace) }
	var status string
	var runErr error
	if !rs.pos.End {
		status, runErr = e.loop(ctx, o, rs, sink, log, started)
	}
	// A run that sweeps and read its last page is completed by finishPass
	// (after its sweep); so is a run continued at its end (its sweep or
	// its completion did not commit before the process died).
	if rs.pos.End && (status == "" || status == contract.RunCompleted && e.sweeps(rs)) {
		status, runErr = e.finishPass(ctx, endCtx, o, rs, sink, log)
	}
	wctx, stopWrites := endCtx()
	defer stopWrites()
	return e.end(wctx, res, rs, status, runErr, log, started)
}

// end records how the run ended under ectx (a write context: WriteGrace
// after a signal, or after it begins once the time limit passed), fills
// res from rs and logs the summary line. A state that does not answer
// within the grace after a signal or the limit leaves the run unfinished,
// as a killed process would: the next run continues it, and this one
// stays interrupted or partial. It returns res and the error that ended the
// run (ErrInterrupted for an interrupted one).
func (e *Engine) end(ectx context.Context, res *Result, rs *runState, status string, runErr error, log *slog.Logger, started time.Time) (*Result, error) {
	job := e.Job
	// stopped tells a write ectx cancelled after a signal or the time
	// limit: the run stays interrupted or partial.
	stopped := func(err error) bool {
		if _, ok := writeStopped(ectx); ok && (status == contract.RunInterrupted || status == contract.RunPartial) {
			log.Warn("run's end not written: the state did not answer within the grace; the run stays unfinished and the next run continues it",
				"grace", WriteGrace, "err", err)
			return true
		}
		return false
	}
	// A reason found after the last committed page is stored now: the run
	// that continues this pass must not sweep either.
	unsaved := false
	if err := e.saveNoProof(ectx, rs); err != nil && runErr == nil && status != contract.RunCompleted {
		if unsaved = stopped(err); !unsaved {
			runErr, status = err, contract.RunFailed
		}
	}
	msg := ""
	if runErr != nil && status == contract.RunFailed {
		msg = job.Secrets.Redact(runErr.Error())
	}
	if status != contract.RunCompleted && !rs.refused && !unsaved { // a completing page or finishPass already marked the run
		stored := status
		if rs.walk.rewalk { // the next run walks the list again (distinct.go)
			stored = contract.RunAbandoned
		}
		if err := e.Store.FinishRun(ectx, rs.info.ID, stored, msg, ""); err != nil && runErr == nil && !stopped(err) {
			runErr, status = err, contract.RunFailed
		}
	}
	if rs.future.n > 0 {
		log.Warn("records dated more than max_future after the run's start were synced but do not move the saved mark",
			"records", rs.future.n, "furthest", rs.future.furthest, "max_future", e.maxFuture().String())
	}
	res.Status = status
	res.Pages, res.Records, res.Skipped = rs.pages, rs.records, rs.skipped
	res.Inserted, res.Updated, res.Unchanged = rs.total.Inserted, rs.total.Updated, rs.total.Unchanged
	res.Deleted, res.Children = rs.total.Deleted, rs.total.Children
	res.Checkpoint = rs.pos.Describe(job.Pagination.Style, job.Secrets)
	res.HWM = rs.hwm
	res.DurationMS = time.Since(started).Milliseconds()
	if status == contract.RunInterrupted {
		runErr = contract.ErrInterrupted
	}
	if runErr != nil {
		res.Error = job.Secrets.Redact(runErr.Error())
	}
	if r := rs.proof.reason; r != "" && e.sweeps(rs) {
		res.Sweep, res.SweepSkipped = SweepSkippedOutcome, job.Secrets.Redact(r)
	}
	res.PendingDeletes = rs.pending
	res.SchemaChanges, res.SchemaDiscards = rs.schema.result()
	log.Info("run finished", "status", status, "pages", rs.pages, "records", rs.records,
		"inserted", rs.total.Inserted, "updated", rs.total.Updated, "unchanged", rs.total.Unchanged,
		"skipped", rs.skipped, "deleted", rs.total.Deleted, "checkpoint", res.Checkpoint, "ms", res.DurationMS)
	return res, runErr
}

func wrapPermanent(context string, err error) error {
	var e *contract.Error
	if errors.As(err, &e) {
		return fmt.Errorf("%s: %w", context, err)
	}
	return &contract.Error{Class: contract.Permanent, Msg: context, Err: err}
}
