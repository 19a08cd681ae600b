package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemsync/idemsync/jobfile"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

// jobStatus is one job in status --json (docs/operations.md, "status"). The
// first six fields are the stable contract; the others appear only when set or
// asked for.
type jobStatus struct {
	Name        string                `json:"name"`
	Resource    string                `json:"resource,omitempty"` // the resource's name in a job file with several
	Status      string                `json:"status"`             // never_run, running, interrupted, partial, failed, completed
	Checkpoint  string                `json:"checkpoint"`
	HWM         string                `json:"hwm"`
	LastRun     *runStatus            `json:"last_run"`
	LastSync    *runStatus            `json:"last_sync"` // newest run of kind run; differs from last_run after a replay
	DeadLetters int64                 `json:"dead_letters"`
	Holder      string                `json:"lock_holder,omitempty"`
	Runs        []runStatus           `json:"runs,omitempty"`
	Dead        []contract.DeadLetter `json:"dead_letter_records,omitempty"`
	// Schema (--schema-changes) lists the columns the job's pages added or
	// widened, newest first (docs/job-file.md, "The schema contract").
	Schema []contract.SchemaChange `json:"schema_changes,omitempty"`
	// WalkChanges (status JOB.yaml only) lists what the job file changed
	// in the walk of the unfinished run (the next run exits 2) or of the
	// last completed run (the next run starts from the beginning).
	WalkChanges []string `json:"walk_changes,omitempty"`
	// LastFullPass is when the job's last completed full pass started
	// (docs/deletions.md, "Full passes"; incremental.full_every counts from
	// it).
	LastFullPass *time.Time `json:"last_full_pass,omitempty"`
	// lookedIn (text only) says, for a job that never ran, where status
	// looked for its state (stateNotFound).
	lookedIn string
}

// runStatus is a stored run: the fields of run --json, plus when it
// started and (unless it is running) finished. exit_code and resumed
// describe one invocation, not a stored run: they are left out.
type runStatus struct {
	idsync.Result
	RunNumber  int64      `json:"run_number"` // the job's runs counted from 1; run_id is unique in the state file
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	ExitCode   *int       `json:"exit_code,omitempty"` // hides Result's
	Resumed    *bool      `json:"resumed,omitempty"`   // hides Result's
	// Refused: a full pass whose sweep max_delete_ratio refused (shown
	// failed; never continued: the next run is a fresh full pass).
	Refused bool `json:"-"`
}

// statusOptions are the parsed command line of status.
type statusOptions struct {
	io     *IOStreams
	g      *globalOpts
	args   []string // the job file, or none
	runs   int
	dead   bool
	schema bool
}

func newCmdStatus(f *Factory, runF func(*statusOptions) error) *cobra.Command {
	o := &statusOptions{io: f.IOStreams, g: f.globals}
	c := &cobra.Command{
		Use:   "status [JOB.yaml]",
		Short: "Show checkpoints, marks, last runs, errors and dead letters",
		Long: `Show the job's state, checkpoint, saved high-water mark, last run (when,
how long, counts, error), dead-letter count and, while a run is in progress,
who holds its lock. Without a job file, every job in the state file (--state,
$IDEMSYNC_STATE, or .idemsync/state.db in the current folder).

status only reads: it never creates a state file, and a job that never ran
says so. --json prints {"jobs":[{"name","status","checkpoint","hwm",
"last_run","last_sync","dead_letters","last_full_pass"}]} with status one of never_run,
running, interrupted, partial, failed, completed; last_sync is the newest
run of kind run (a replay does not hide it). run_id is unique in the state
file; run_number counts the job's runs from 1.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return &usageError{err: fmt.Errorf("status takes at most one job file")}
			}
			return nil
		},
		ValidArgsFunction: jobFileArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.args = args
			if o.runs < 0 {
				return &usageError{err: fmt.Errorf("--runs must not be negative")}
			}
			if runF != nil {
				return runF(o)
			}
			return status(c.Context(), o.g, o.io, o.args, o)
		},
	}
	c.Flags().IntVar(&o.runs, "runs", 0, "also list the last N runs of each job, newest first")
	c.Flags().BoolVar(&o.dead, "dead-letters", false, "also list the dead-lettered records (raw JSON and reason)")
	c.Flags().BoolVar(&o.schema, "schema-changes", false, "also list the columns the job's pages added or widened, and why")
	return c
}

func status(ctx context.Context, g *globalOpts, ios *IOStreams, args []string, o *statusOptions) error {
	var jf *jobfile.File
	var first *idsync.Job
	red := idsync.NewRedactor()
	var unset []string // ${VAR}s not set here: the job file's walk is not known
	if len(args) == 1 {
		var err error
		if jf, unset, err = jobfile.LoadForState(args[0]); err != nil {
			return err
		}
		first = jf.Resources[0].Job
		for _, r := range jf.Resources {
			red.Merge(r.Job.Secrets)
		}
		g.jobName = jf.Name
	}
	log, err := newLogger(ios.ErrOut, g.logFormat, g.logLevel, g.quiet, red, g.jobName)
	if err != nil {
		return &usageError{err: err}
	}
	path := g.statePath(first)
	var out []jobStatus
	// Never create the state file: no file means no job has run.
	if stateMissing(path) {
		if jf != nil {
			for _, r := range jf.Resources {
				out = append(out, withResource(jobStatus{Name: r.Job.Name, Status: contract.JobNeverRun}, jf.Multi))
			}
			out[len(out)-1].lookedIn = g.stateNotFound(first, path, args[0])
		}
		return printStatus(ios, g, out, path, jf != nil && jf.Multi)
	}
	store, err := openStore(ctx, path, log)
	if err != nil {
		return err
	}
	defer store.Close()
	if jf == nil {
		states, err := store.Jobs(ctx)
		if err != nil {
			return err
		}
		for i := range states {
			s, err := jobState(ctx, store, &states[i], "", red, o)
			if err != nil {
				return err
			}
			out = append(out, withResource(s, true))
		}
		return printStatus(ios, g, out, path, false)
	}
	ran := false
	for _, r := range jf.Resources {
		js, err := store.Job(ctx, r.Job.Name)
		if err != nil {
			return err
		}
		s, err := jobState(ctx, store, js, r.Job.Pagination.Style, red, o)
		if err != nil {
			return err
		}
		if unset == nil {
			s.WalkChanges = walkChanges(r.Job, js)
		}
		out = append(out, withResource(s, jf.Multi))
		ran = ran || s.Status != contract.JobNeverRun
	}
	if !ran {
		out[len(out)-1].lookedIn = g.stateNotFound(first, path, args[0])
	}
	return printStatus(ios, g, out, path, jf.Multi)
}

// withResource splits the state name of a resource ("shop.orders") into the
// job's name and the resource's (docs/operations.md, "status"); a
// single-resource job's name stays as it is.
func withResource(s jobStatus, multi bool) jobStatus {
	if job, res, ok := strings.Cut(s.Name, jobfile.ResourceSep); ok && multi {
		s.Name, s.Resource = job, res
	}
	return s
}

// jobState gathers one job's status from the store.
func jobState(ctx context.Context, store contract.Store, js *contract.JobState, style string, red *idsync.Redactor, o *statusOptions) (jobStatus, error) {
	s := jobStatus{Name: js.Name, Status: idsync.JobStatus(js), HWM: js.HWM, DeadLetters: js.DeadLetters, Holder: js.Holder}
	if !js.FullPassAt.IsZero() {
		at := js.FullPassAt.UTC()
		s.LastFullPass = &at
	}
	if js.LastRun != nil {
		r := storedRun(js.LastRun, style, js.HWM, red, js.Holder != "")
		s.LastRun, s.Checkpoint = &r, r.Checkpoint
	}
	if js.LastSync != nil {
		r := storedRun(js.LastSync, style, js.HWM, red, js.Holder != "" && js.LastSync == js.LastRun)
		s.LastSync = &r
	}
	if o.runs > 0 {
		runs, err := store.Runs(ctx, js.Name, o.runs)
		if err != nil {
			return s, err
		}
		s.Runs = make([]runStatus, 0, len(runs))
		for j := range runs {
			// Only the newest run can be the one holding the lock.
			s.Runs = append(s.Runs, storedRun(&runs[j], style, js.HWM, red, j == 0 && js.Holder != ""))
		}
	}
	if o.dead {
		var err error
		if s.Dead, err = store.DeadLetters(ctx, js.Name, 0); err != nil {
			return s, err
		}
		if s.Dead == nil {
			s.Dead = []contract.DeadLetter{}
		}
	}
	if o.schema {
		var err error
		if s.Schema, err = store.SchemaChanges(ctx, js.Name, 0); err != nil {
			return s, err
		}
		if s.Schema == nil {
			s.Schema = []contract.SchemaChange{}
		}
	}
	return s, nil
}

// storedRun presents a stored run. A run recorded as running whose lock
// nobody holds was killed: it is reported interrupted.
func storedRun(r *contract.RunInfo, style, hwm string, red *idsync.Redactor, locked bool) runStatus {
	res := idsync.RunResult(r, style, hwm, red)
	if res.Status == contract.RunRunning && !locked {
		res.Status = contract.RunInterrupted
	}
	out := runStatus{Result: res, RunNumber: r.Number, StartedAt: r.StartedAt.UTC(), Refused: r.Status == contract.RunRefused}
	if !r.FinishedAt.IsZero() {
		t := r.FinishedAt.UTC()
		out.FinishedAt = &t
	}
	return out
}

func printStatus(ios *IOStreams, g *globalOpts, jobs []jobStatus, path string, multi bool) error {
	if g.json {
		if jobs == nil {
			jobs = []jobStatus{}
		}
		writeJSON(ios, map[string]any{"jobs": jobs})
		return nil
	}
	if len(jobs) == 0 {
		fmt.Fprintf(ios.Out, "no jobs in %s\n", stateName(path))
		return nil
	}
	if multi {
		writeResourcesTable(ios.Out, jobs)
		if w := jobs[len(jobs)-1].lookedIn; w != "" {
			fmt.Fprintf(ios.Out, "state: %s\n", w)
		}
		if jobs[0].Runs == nil && jobs[0].Dead == nil && jobs[0].Schema == nil && !anyWalkChanges(jobs) {
			return nil
		}
		fmt.Fprintln(ios.Out)
	}
	for i, j := range jobs {
		if i > 0 {
			fmt.Fprintln(ios.Out)
		}
		writeJobTable(ios.Out, j)
	}
	return nil
}

// walkChanges compares the job file's walk with the one the job's
// unfinished run started with or, when none, with its last run's; nil
// when nothing changed or nothing is stored.
func walkChanges(job *idsync.Job, js *contract.JobState) []string {
	stored := js.Identity
	if r := js.LastRun; r != nil && r.Unfinished() {
		stored = r.Identity
	} else if js.LastSync == nil {
		return nil
	}
	old, err := idsync.DecodeIdentity(stored)
	if err != nil {
		return nil
	}
	return job.Identity().Changes(old)
}
