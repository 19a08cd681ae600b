package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/runner"
	httpsource "github.com/idemsync/idemsync/source/http"
	idsync "github.com/idemsync/idemsync/sync"
)

// runOptions are the parsed command line of run, resume or replay.
type runOptions struct {
	io        *IOStreams
	g         *globalOpts
	name      string // run, resume or replay
	file      string // the job file
	restart   bool
	full      bool // --full
	allowMass bool // --allow-mass-delete
	maxPages  int
	timeLimit time.Duration
	from, to  string
	metrics   string   // --metrics-file
	resources []string // --resource
	verify    bool     // --verify
	gate      runGate  // --if-running, --run-key (run only)
	ifRunning string
}

// newCmdRun is run: continue the job's unfinished run or start one.
func newCmdRun(f *Factory, runF func(*runOptions) error) *cobra.Command {
	return newRunCmd(f, contract.KindRun, runF)
}

// newCmdResume is resume: continue the unfinished run, or exit 5.
func newCmdResume(f *Factory, runF func(*runOptions) error) *cobra.Command {
	return newRunCmd(f, "resume", runF)
}

// newCmdReplay is replay: re-sync a range of pages.
func newCmdReplay(f *Factory, runF func(*runOptions) error) *cobra.Command {
	return newRunCmd(f, contract.KindReplay, runF)
}

// newRunCmd builds run, resume and replay: they share everything but how
// they pick the run to do.
func newRunCmd(f *Factory, name string, runF func(*runOptions) error) *cobra.Command {
	o := &runOptions{io: f.IOStreams, g: f.globals, name: name}
	c := &cobra.Command{Args: exactArgs(1), ValidArgsFunction: jobFileArgs}
	switch name {
	case contract.KindRun:
		c.Use = "run JOB.yaml"
		c.Short = "Sync: continue the job's unfinished run, or start a new one"
		c.Long = `Sync the job. If it has an unfinished run (crashed, interrupted, failed or
partial) it continues from the last committed page; otherwise it starts a new
run (incremental and hwm jobs from the saved mark minus overlap).

With --verify the run compares the stored mapped columns of every row it
reads with the values it would write (not only the content hash), and
rewrites rows changed outside idemsync: a hand-edited value, a column dropped
and added again, a value stored in another form. They count as updated. A
completed non-incremental job is read in full by a new run; an incremental
or hwm job reads only from its saved mark: add --restart, or use
replay --verify, to check the whole range. On PostgreSQL a value that a
narrowed column (numeric scale, varchar(n)) can no longer hold as written
fails the run (exit 1) naming the table, column and key.`
	case "resume":
		c.Use = "resume JOB.yaml"
		c.Short = "Continue the job's unfinished run; exit 5 when there is none"
	case contract.KindReplay:
		c.Use = "replay JOB.yaml --from V [--to V]"
		c.Short = "Re-sync a range of pages (backfill); never moves the saved mark back"
		c.Long = `Re-sync a range: --from and --to are page numbers (page), offsets (offset),
cursor tokens or next URLs (cursor, link), or marks (hwm). Upserts make it
duplicate-free; it is itself resumable; it never moves the saved mark.`
	}
	c.RunE = func(c *cobra.Command, args []string) error {
		o.file = args[0]
		if name == contract.KindReplay && o.from == "" {
			return &usageError{err: fmt.Errorf("replay needs --from")}
		}
		if o.maxPages < 0 || o.timeLimit < 0 {
			return &usageError{err: fmt.Errorf("--max-pages and --time-limit must not be negative")}
		}
		if name == contract.KindRun {
			from := "--if-running"
			if v := os.Getenv("IDEMSYNC_IF_RUNNING"); v != "" && !c.Flags().Changed("if-running") {
				o.ifRunning, from = v, "$IDEMSYNC_IF_RUNNING"
			}
			if err := o.gate.parseIfRunning(from, o.ifRunning); err != nil {
				return err
			}
			if err := o.gate.checkKey(); err != nil {
				return err
			}
		} else {
			// resume and replay never skip a job another run holds, on a
			// lease either: exit 4 (docs/operations.md, "A second host").
			o.gate.ifRunning = ifRunningFail
		}
		if runF != nil {
			return runF(o)
		}
		return runJob(c.Context(), o.g, o.io, o.file, o.engineOptions(), o.metrics, o.resources, o.gate)
	}
	fl := c.Flags()
	fl.IntVar(&o.maxPages, "max-pages", 0, "stop cleanly after N pages (the run stays unfinished; exit 0, status partial)")
	fl.DurationVar(&o.timeLimit, "time-limit", 0, "stop cleanly after the page in progress once this long has passed (e.g. 14m)")
	fl.StringArrayVar(&o.resources, "resource", nil, "run only this resource of the job file (repeatable; replay takes exactly one)")
	fl.StringVar(&o.metrics, "metrics-file", "", "after the run, write Prometheus metrics to this file (for node_exporter's textfile collector)")
	fl.BoolVar(&o.verify, "verify", false, "compare every stored column of the rows this invocation reads, not only their content hash, and rewrite rows changed outside idemsync (counted as updated)")
	if name == contract.KindRun {
		fl.BoolVar(&o.restart, "restart", false, "abandon the unfinished run and start over from the beginning (forgets the saved mark)")
		fl.BoolVar(&o.full, "full", false, "make this run a full pass: no lower bound, from the first page; with target.deletes, sweep at its end")
		fl.StringVar(&o.ifRunning, "if-running", "", "when another run holds the job: skip (exit 0, status skipped), fail (exit 4), wait or wait=DURATION (default $IDEMSYNC_IF_RUNNING, else skip on a PostgreSQL state and fail on a state file)")
		fl.StringVar(&o.gate.key, "run-key", "", "run once per key: a later start with the same key reports the first's result and fetches nothing (default $IDEMSYNC_RUN_KEY)")
	}
	if name != contract.KindReplay {
		fl.BoolVar(&o.allowMass, "allow-mass-delete", false, "let this run's sweep remove more than target.max_delete_ratio of the table's rows")
	}
	if name == contract.KindReplay {
		fl.StringVar(&o.from, "from", "", "first position to re-sync (page, offset, cursor, URL or mark)")
		fl.StringVar(&o.to, "to", "", "last position to re-sync (default: to the end)")
	}
	return c
}

// engineOptions are the engine's options for the command line o.
func (o *runOptions) engineOptions() idsync.Options {
	opts := idsync.Options{Kind: contract.KindRun, MaxPages: o.maxPages, TimeLimit: o.timeLimit, Restart: o.restart,
		Verify: o.verify, Full: o.full, AllowMassDelete: o.allowMass}
	switch o.name {
	case "resume":
		opts.Resume = true
	case contract.KindReplay:
		opts.Kind, opts.From, opts.To = contract.KindReplay, o.from, o.to
	}
	return opts
}

func runJob(ctx context.Context, g *globalOpts, ios *IOStreams, file string, opts idsync.Options, metricsFile string, only []string, gate runGate) error {
	started := time.Now()
	jf, err := jobfile.LoadResourcesFile(file)
	if err != nil {
		g.jobName = jobfile.SpecName(err)
		return failed(ios, g, &idsync.Result{Kind: opts.Kind, Status: contract.RunFailed}, err, nil)
	}
	g.jobName, g.keyring = jf.Name, newKeyring(jf)
	only = distinct(only) // a resource named twice is named once (docs/job-file.md, "Running a file with several resources")
	if err := checkOnly(jf, only, opts.Kind); err != nil {
		return failed(ios, g, &idsync.Result{Job: jf.Name, Kind: opts.Kind, Status: contract.RunFailed}, err, nil)
	}
	if err := checkAllowScope(jf, opts, only); err != nil {
		return failed(ios, g, &idsync.Result{Job: jf.Name, Kind: opts.Kind, Status: contract.RunFailed}, err, nil)
	}
	if jf.Multi {
		return runResources(ctx, g, ios, jf, opts, metricsFile, only, started, gate)
	}
	job := jf.Resources[0].Job
	// Disarmed last, after the lock's release and the state file's close:
	// a second signal while they take their time (up to 1 s each after a
	// signal) exits with the code of the object already printed, not 130
	// (docs/operations.md, "Signals").
	var disarm func()
	defer func() {
		if disarm != nil {
			disarm()
		}
	}()
	skeleton := func() *idsync.Result {
		return &idsync.Result{Job: job.Name, Kind: opts.Kind, Status: contract.RunFailed,
			DurationMS: time.Since(started).Milliseconds()}
	}
	log, err := newLogger(ios.ErrOut, g.logFormat, g.logLevel, g.quiet, job.Secrets, job.Name)
	if err != nil {
		return failed(ios, g, skeleton(), contract.Errorf(contract.Invalid, "%w", err), job.Secrets)
	}
	if err := checkStateTarget(g.statePath(job), job); err != nil {
		return failed(ios, g, skeleton(), err, job.Secrets)
	}
	store, err := openStore(ctx, g.statePath(job), log)
	if err != nil {
		return failed(ios, g, skeleton(), interrupted(ctx, err), job.Secrets)
	}
	defer store.Close()
	unlock, err := gate.acquire(ctx, store, job.Name, opts.Kind)
	if done, err := gate.reported(ios, g, err); done || err != nil {
		if err == nil {
			return nil
		}
		return failed(ios, g, skeleton(), interrupted(ctx, err), job.Secrets)
	}
	defer unlock()
	store = heldStore{Store: store, job: job.Name}
	var track func(idsync.PageEvent)
	if g.json {
		gate := &jsonGate{}
		g.gate = gate
		track, disarm = armHardExit(ios, gate, job, opts.Kind, started)
	}
	// --time-limit counts from the command's start, as for a job file
	// with several resources: the waits before the run (a busy state
	// file, its migration, the job's lock, --if-running wait) are part of
	// it. A limit already passed still lets the run commit one page
	// (docs/operations.md, "--time-limit").
	until := limitAt(started, opts)
	if opts.TimeLimit > 0 {
		opts.TimeLimit = max(opts.TimeLimit-time.Since(started), time.Nanosecond)
	}
	metrics := newRunMetrics(metricsFile, store, job, started, log)
	res, err := runOne(ctx, g, ios, store, job, opts, metrics, runner.Hooks{Start: track, Page: track})
	if res.RunID == 0 {
		err = interrupted(ctx, err)
	}
	code := exitCode(err)
	// The engine's time leaves out the waits before it (a busy state
	// file, --if-running wait): duration_ms is the command's
	// (docs/operations.md, "--json output").
	res.ExitCode, res.DurationMS = code, time.Since(started).Milliseconds()
	if res.RunID == 0 && err != nil {
		return failed(ios, g, res, err, job.Secrets) // nothing ran
	}
	if kerr := gate.remember(ctx, store, job.Name, code, res, until); kerr != nil {
		log.Warn("run key not recorded: a second start with it runs again", "key", gate.key, "err", kerr)
	}
	printResult(ios, g, res, err)
	if code != 0 {
		return &reportedError{code: code}
	}
	return nil
}

// runOne runs one job (a single-resource job, or one resource of a job
// file) with the state file already open: its progress bar and logs, its
// fetcher and auth, its engine, its metrics and, after the run, its
// retention. It returns the run's result (RunID 0 when nothing ran) and
// the error that ended it.
func runOne(ctx context.Context, g *globalOpts, ios *IOStreams, store contract.Store, job *idsync.Job, opts idsync.Options, metrics *runMetrics, hooks runner.Hooks) (*idsync.Result, error) {
	res := &idsync.Result{Job: job.Name, Kind: opts.Kind, Status: contract.RunFailed}
	// Logs scroll above the bar when there is one.
	bar := newProgress(ios, g, job)
	logOut := ios.ErrOut
	if bar != nil {
		logOut = bar.writer(ios.ErrOut)
		defer bar.finish()
	}
	log, err := newLogger(logOut, g.logFormat, g.logLevel, g.quiet, job.Secrets, job.Name)
	if err != nil {
		return res, contract.Errorf(contract.Invalid, "%w", err)
	}
	fetcher := httpsource.NewFetcher(httpsource.ConfigOf(job), log)
	defer fetcher.Close()
	if err := installAuth(ctx, g, job, fetcher, store, log); err != nil {
		metrics.finish(ctx, err)
		return res, err
	}
	eng := &idsync.Engine{
		Job: job, Store: store, Source: fetcher, Logger: log,
		OpenSink: func(ctx context.Context) (contract.Sink, error) {
			return openWriting(ctx, g, job, log, contract.TableClaim{})
		},
	}
	if bar != nil {
		eng.OnPage = bar.page
		eng.PageLogLevel = slog.LevelDebug // the bar shows the pages
		fetcher.OnRetry = bar.retry
	}
	// A state holding leases fences the target; one in the target's
	// database commits each checkpoint in its rows' transaction
	// (docs/guarantees.md, "One transaction per page", "Fenced targets").
	if fs, ok := baseStore(store).(contract.FencedStore); ok {
		eng.Fenced = fs
		eng.JoinState = stateJoinsTarget(g.statePath(job), job.Target.URL)
	}
	eng.OnStart = hooks.Start
	if started := g.onRunStart; started != nil {
		eng.OnStart = func(ev idsync.PageEvent) {
			if hooks.Start != nil {
				hooks.Start(ev)
			}
			started()
		}
	}
	if hooks.Page != nil {
		barPage := eng.OnPage
		eng.OnPage = func(ev idsync.PageEvent) {
			hooks.Page(ev)
			if barPage != nil {
				barPage(ev)
			}
		}
	}
	eng.OnSweepSkipped = metrics.onSweepSkipped
	opts.AllowCommand = allowCommand(job)
	var limitAt time.Time
	if opts.TimeLimit > 0 {
		limitAt = time.Now().Add(opts.TimeLimit)
		if metrics != nil {
			metrics.limitAt = limitAt
		}
	}
	res, err = eng.Run(ctx, opts)
	if ferr := g.keyring.Flush(ctx); ferr != nil {
		// A rotated refresh token lost outweighs the run's own failure.
		if err != nil {
			log.Error("run failed", "err", err)
		}
		err = ferr
		res.Status, res.Error = contract.RunFailed, job.Secrets.Redact(ferr.Error())
	}
	metrics.finish(ctx, err)
	if bar != nil {
		bar.finish() // before the result is printed
	}
	if res.RunID != 0 {
		// Once the time limit passed, the retention waits for a busy
		// state file or target at most the write grace: the next run
		// prunes what this one could not (docs/operations.md,
		// "--time-limit").
		pctx := ctx
		if !limitAt.IsZero() && !time.Now().Before(limitAt) {
			var cancel context.CancelFunc
			pctx, cancel = context.WithTimeout(ctx, idsync.WriteGrace)
			defer cancel()
		}
		autoPrune(pctx, store, job.Name, job.Retention.Duration, log)
		pruneFeed(pctx, job, log)
	}
	return res, err
}

// failed reports a run that never started (invalid spec, lock held,
// unreachable target): with --json as a result object with every run field,
// so scripts parse one shape whatever happened; otherwise as the usual
// error on stderr.
func failed(ios *IOStreams, g *globalOpts, res *idsync.Result, err error, red *idsync.Redactor) error {
	if !g.json {
		return err
	}
	res.ExitCode = exitCode(err)
	res.Error = red.Redact(err.Error())
	if res.Job == "" {
		res.Job = g.jobName
	}
	switch res.ExitCode {
	case exitLocked:
		res.Status = "locked"
	case exitNothing:
		res.Status = "nothing_to_resume"
	case exitInterrupted:
		res.Status = contract.RunInterrupted
	}
	g.writeResult(ios, res)
	return &reportedError{code: res.ExitCode}
}

func printResult(ios *IOStreams, g *globalOpts, r *idsync.Result, err error) {
	if g.json {
		g.writeResult(ios, r)
		return
	}
	if g.jsonLogs() {
		// The "run finished" log line is the summary; stdout has it
		// only with --json.
		if err != nil {
			writeErrorLog(ios, g, r.Error, contract.Hint(err), exitCode(err))
		}
		return
	}
	if err != nil {
		fmt.Fprintf(ios.ErrOut, "error: %s\n", r.Error)
		if h := contract.Hint(err); h != "" {
			fmt.Fprintf(ios.ErrOut, "hint: %s\n", h)
		}
	}
	if g.quiet && err == nil {
		return
	}
	what := r.Kind
	if r.Resumed {
		what += " " + fmt.Sprint(r.RunID) + " (continued)"
	} else {
		what += " " + fmt.Sprint(r.RunID)
	}
	sweep := ""
	if r.Sweep == idsync.SweepSkippedOutcome {
		sweep = fmt.Sprintf("; sweep: skipped (%s)", r.SweepSkipped)
	}
	fmt.Fprintf(ios.Out, "%s: %s %s: %d pages, %d records (%d inserted, %d updated, %d unchanged, %d skipped) in %s; checkpoint %s%s\n",
		r.Job, what, r.Status, r.Pages, r.Records, r.Inserted, r.Updated, r.Unchanged, r.Skipped,
		(time.Duration(r.DurationMS) * time.Millisecond).String(), r.Checkpoint, sweep)
}

// autoPrune applies the job's retention (job file key retention:, default
// 30d) after a run: its
// old runs and page rows go, so the state file stays bounded. A failure is
// a warning; it never changes the run's outcome.
func autoPrune(ctx context.Context, store contract.Store, job string, keep time.Duration, log *slog.Logger) {
	if ctx.Err() != nil {
		return
	}
	if _, err := store.Prune(ctx, job, keep); err != nil {
		log.Warn("prune old runs", "err", err)
	}
}
