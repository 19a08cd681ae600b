package sync

import (
	"context"
	"time"
)

// Run kinds.
const (
	KindRun    = "run"
	KindReplay = "replay"
)

// Run statuses as stored. A run is unfinished while its status is running
// (or it crashed while running), interrupted, failed or partial.
const (
	RunRunning     = "running"
	RunInterrupted = "interrupted"
	RunFailed      = "failed"
	RunPartial     = "partial"
	RunCompleted   = "completed"
	RunAbandoned   = "abandoned"
	// RunRefused is a full pass whose sweep max_delete_ratio refused: it
	// failed for good (status shows it failed) and is never continued.
	RunRefused = "refused"
)

// Job statuses reported by status (SPEC §2).
const (
	JobNeverRun    = "never_run"
	JobRunning     = "running"
	JobInterrupted = "interrupted"
	JobPartial     = "partial" // extension: stopped by --max-pages/--time-limit
	JobFailed      = "failed"
	JobCompleted   = "completed"
)

// RunInfo is one run of a job as the state file keeps it.
type RunInfo struct {
	ID int64 `json:"run_id"`
	// Number counts the job's runs from 1 (ID is unique in the state file).
	Number     int64     `json:"run_number"`
	Job        string    `json:"job"`
	Kind       string    `json:"kind"`
	Status     string    `json:"status"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Pages      int64     `json:"pages"`
	Records    int64     `json:"records"`
	Inserted   int64     `json:"inserted"`
	Updated    int64     `json:"updated"`
	Unchanged  int64     `json:"unchanged"`
	Skipped    int64     `json:"skipped"`
	// Deleted counts the rows the run deleted or marked deleted:
	// tombstones and the sweep of a full pass.
	Deleted int64 `json:"deleted"`
	// Full: the run is a full pass (SPEC §10), fixed when it starts.
	Full bool `json:"full,omitempty"`
	// SweepSkipped is the first reason the full pass found that voids its
	// proof of absence: its sweep does nothing ("" while it has none;
	// docs/deletions.md).
	SweepSkipped string `json:"sweep_skipped,omitempty"`
	// LiveBefore is the live rows of the target table when a full pass
	// that sweeps started (max_delete_ratio's base, docs/deletions.md); -1
	// for other runs and when unknown. 0 is a known empty table.
	LiveBefore int64 `json:"-"`
	// RefusedSince, on a full pass that follows a refused sweep, is when
	// the first pass of that chain of refusals started: only rows written
	// before it count against max_delete_ratio, and LiveBefore is that
	// first pass's (docs/deletions.md). Zero for every other run.
	RefusedSince time.Time `json:"-"`
	// Swept: the full pass's sweep ran with proof; PendingDeletes is how
	// many rows it missed but kept for the next proving pass
	// (docs/deletions.md, "Two passes").
	Swept          bool  `json:"-"`
	PendingDeletes int64 `json:"-"`
	// Checkpoint is the encoded Position of the next page to fetch.
	Checkpoint string `json:"checkpoint"`
	// Last is the encoded Position of the last committed page ("" if none).
	Last string `json:"-"`
	// Window is the incremental mark sent on every request of this run,
	// fixed when the run started ("" when the job is not incremental).
	Window string `json:"window,omitempty"`
	// MaxMark is the highest incremental field value committed in this run.
	MaxMark string `json:"-"`
	// From and To bound a replay ("" otherwise).
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
	Error string `json:"error,omitempty"`
	// Identity is the encoded Identity of the walk the run was started
	// with ("" when the state file predates identities).
	Identity string `json:"-"`
}

// Unfinished reports whether the run can be continued.
func (r *RunInfo) Unfinished() bool {
	switch r.Status {
	case RunRunning, RunInterrupted, RunFailed, RunPartial:
		return true
	}
	return false
}

// JobState is what the state file knows about one job.
type JobState struct {
	Name        string
	HWM         string   // saved high-water mark ("" when none)
	Identity    string   // encoded Identity of the job's latest run ("" when none is stored)
	Columns     []Column // inferred columns saved so far
	LastRun     *RunInfo // most recent run, nil when never run
	LastSync    *RunInfo // most recent run of kind run (not a replay), nil when none
	DeadLetters int64
	Holder      string // "pid N on HOST since T" while a run holds the lock
	// FullPassAt is when the job's last completed full pass started
	// (zero: none completed).
	FullPassAt time.Time
	// FullDue: the next run must be a full pass (a sweep was refused).
	FullDue bool
}

// PageCommit is everything recorded, in one state transaction, after a
// page's rows were committed to the target.
type PageCommit struct {
	RunID    int64
	Position string // encoded Position of the committed page
	Next     string // encoded Position of the next page (the new checkpoint)
	Records  int64
	Hash     string // content hash of the page
	Counts   Counts
	Skipped  int64
	MaxMark  string       // run's MaxMark after this page ("" = unchanged)
	HWM      string       // job's saved mark after this page ("" = unchanged)
	Columns  []Column     // inferred columns after this page (nil = unchanged)
	Dead     []DeadLetter // bad records skipped on this page
	// Keys are the KeyString of every row of the page, recorded with the
	// page so that a full pass knows the keys it saw (docs/deletions.md);
	// nil records none, which makes the run's set incomplete.
	Keys       []string
	Elapsed    time.Duration // fetch to commit
	FinishedAt time.Time     // set when this page completes the run
}

// PageInfo is one committed page.
type PageInfo struct {
	RunID       int64
	Seq         int64
	Position    string
	Next        string
	Records     int64
	Hash        string
	CommittedAt time.Time
}

// DeadLetter is a record skipped under on_bad_record: skip.
type DeadLetter struct {
	ID       int64     `json:"id"`
	Job      string    `json:"job"`
	RunID    int64     `json:"run_id"`
	Position string    `json:"position"`
	Index    int       `json:"index"`
	Reason   string    `json:"reason"`
	Raw      string    `json:"raw"`
	At       time.Time `json:"at"`
}

// Store is the durable state of jobs: checkpoints, runs, pages, dead
// letters, and the per-job run lock. The checkpoint package implements it.
type Store interface {
	// Lock takes the job's run lock without waiting. It returns ErrLocked
	// when another process holds it. The lock dies with the process.
	Lock(ctx context.Context, job string) (unlock func(), err error)
	// Job returns the job's state; a job never seen returns a JobState with
	// only Name set.
	Job(ctx context.Context, job string) (*JobState, error)
	// Jobs returns the state of every job in the file, by name.
	Jobs(ctx context.Context) ([]JobState, error)
	// Unfinished returns the job's latest run when it is unfinished, or nil.
	Unfinished(ctx context.Context, job string) (*RunInfo, error)
	// StartRun records a new run (status running) and returns its ID.
	StartRun(ctx context.Context, r *RunInfo) (int64, error)
	// Reopen marks an unfinished run running again.
	Reopen(ctx context.Context, runID int64) error
	// CommitPage records a committed page in one transaction.
	CommitPage(ctx context.Context, job string, p *PageCommit) error
	// FinishRun sets a run's final status and error. With status completed
	// and hwm != "", the job's saved mark becomes hwm.
	FinishRun(ctx context.Context, runID int64, status, errMsg, hwm string) error
	// ClearMark forgets the job's saved high-water mark.
	ClearMark(ctx context.Context, job string) error
	// AdoptIdentity stores identity for the run and the job where none is
	// stored (a state file older than identities); it never overwrites one.
	AdoptIdentity(ctx context.Context, job string, runID int64, identity string) error
	// Pages returns the committed pages of a run in order.
	Pages(ctx context.Context, runID int64) ([]PageInfo, error)
	// Runs returns the job's latest n runs, newest first.
	Runs(ctx context.Context, job string, n int) ([]RunInfo, error)
	// DeadLetters returns the job's dead letters, newest first (n <= 0: all).
	DeadLetters(ctx context.Context, job string, n int) ([]DeadLetter, error)
	// SeenKeys calls fn with the key of every row of every page committed
	// to runID (docs/deletions.md); complete is false when a page was
	// committed without its keys.
	SeenKeys(ctx context.Context, runID int64, fn func(key string) error) (complete bool, err error)
	// CompletePass completes the full pass runID (unfinished, at its end):
	// adds deleted to its count, marks it completed and makes its start
	// the job's last full pass, in one transaction.
	CompletePass(ctx context.Context, runID int64, deleted int64) error
	// SkipSweep records reason as why the full pass runID cannot prove
	// absence (RunInfo.SweepSkipped); the first reason stored stays.
	SkipSweep(ctx context.Context, runID int64, reason string) error
	// RefusePass ends the full pass runID for good with status refused and
	// errMsg, and makes the job's next run a full pass.
	RefusePass(ctx context.Context, runID int64, errMsg string) error
	// PriorPass returns the last full pass of runID's job before it whose
	// sweep ran with proof (RecordSweep), ok false when none has all its
	// keys (docs/deletions.md, "Two passes").
	PriorPass(ctx context.Context, runID int64) (p PriorPass, ok bool, err error)
	// SightedKeys calls fn with every key the pages of the job's runs from
	// fromID up to, not including, runID recorded.
	SightedKeys(ctx context.Context, runID, fromID int64, fn func(key string) error) error
	// RecordSweep records that the full pass runID swept with proof and
	// kept pending rows it missed for the next proving pass.
	RecordSweep(ctx context.Context, runID, pending int64) error
	// Close closes the file.
	Close() error
}
