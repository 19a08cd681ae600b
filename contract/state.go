package contract

import "time"

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

// Job statuses reported by status (docs/operations.md).
const (
	JobNeverRun    = "never_run"
	JobRunning     = "running"
	JobInterrupted = "interrupted"
	JobPartial     = "partial" // stopped by --max-pages/--time-limit
	JobFailed      = "failed"
	JobCompleted   = "completed"
)

// RunInfo is one run of a job as the store keeps it.
type RunInfo struct {
	ID int64 `json:"run_id"`
	// Number counts the job's runs from 1 (ID is unique in the store).
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
	// Children is what the run did to each child table, by its name
	// (docs/job-file.md, "Child tables"); nil when nothing.
	Children map[string]ChildCounts `json:"children,omitempty"`
	// SchemaDiscards is what target.schema discarded in the run's pages
	// (docs/job-file.md, "The schema contract").
	SchemaDiscards SchemaDiscards `json:"schema_discards,omitzero"`
	// Full: the run is a full pass (docs/deletions.md), fixed when it starts.
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
	// Checkpoint is the encoded position of the next page to fetch.
	Checkpoint string `json:"checkpoint"`
	// Last is the encoded position of the last committed page ("" if none).
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
	// Identity is the encoded identity of the walk the run was started
	// with ("" when the state predates identities).
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

// JobState is what the store knows about one job.
type JobState struct {
	Name     string
	HWM      string // saved high-water mark ("" when none)
	Identity string // encoded identity of the job's latest run ("" when none is stored)
	// Columns are the inferred columns saved so far, encoded by the
	// engine ("" when none were saved).
	Columns     string
	LastRun     *RunInfo // most recent run, nil when never run
	LastSync    *RunInfo // most recent run of kind run (not a replay), nil when none
	DeadLetters int64
	Holder      string // "pid N on HOST since T" while a run holds the lock
	// LeaseUntil is when the holder's lease ends unless renewed, on a
	// store whose lock is a lease (zero otherwise).
	LeaseUntil time.Time
	// FullPassAt is when the job's last completed full pass started
	// (zero: none completed).
	FullPassAt time.Time
	// FullDue: the next run must be a full pass (a sweep was refused).
	FullDue bool
	// Marker is the target's progress marker of the job's last page
	// committed with rows, or that a page with none was read under
	// (contract.Progress; 0: none recorded).
	Marker int64
}

// PageCommit is everything recorded, in one state transaction, after a
// page's rows were committed to the target.
type PageCommit struct {
	RunID    int64
	Position string // encoded position of the committed page
	Next     string // encoded position of the next page (the new checkpoint)
	Records  int64
	Hash     string // content hash of the page
	// What the target did with the page's rows, added to the run's counts
	// and the job's metrics counters.
	Inserted, Updated, Unchanged, Deleted int64
	Skipped                               int64
	MaxMark                               string       // run's MaxMark after this page ("" = unchanged)
	HWM                                   string       // job's saved mark after this page ("" = unchanged)
	Columns                               string       // encoded inferred columns after this page ("" = unchanged)
	Marker                                int64        // the target's progress marker the page wrote, or read its rows under (0 = unchanged)
	Dead                                  []DeadLetter // bad records skipped on this page
	// SchemaChanges are the columns the page added or widened, recorded
	// with the page (their Job, RunID and At are the store's to set).
	SchemaChanges []SchemaChange
	// Children is what the page did to each child table, added to the
	// run's counts per child table (nil: nothing).
	Children map[string]ChildCounts
	// SchemaDiscards is what target.schema discarded on the page, added
	// to the run's.
	SchemaDiscards SchemaDiscards
	// Keys are the key of every row of the page, recorded with the page
	// so that a full pass knows the keys it saw (docs/deletions.md); nil
	// records none, which makes the run's set incomplete.
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

// PruneStats is what Prune removed from one job.
type PruneStats struct {
	Job   string `json:"name"`
	Runs  int64  `json:"runs_deleted"`
	Pages int64  `json:"pages_deleted"`
	Kept  int64  `json:"runs_kept"`
}

// RunMetrics is how one command (run, resume or replay) ended: when, how
// long it took, its exit code, and whether it succeeded (exit 0). The
// counters are not part of it: they move with each page's commit.
type RunMetrics struct {
	// SweepsSkipped counts the full passes that ended with their sweep
	// skipped (0 or 1).
	SweepsSkipped int64
	At            time.Time
	Duration      time.Duration
	ExitCode      int
	Success       bool
}

// MetricsTotals are a job's metrics as --metrics-file reports them:
// counters summed over the job's life, and the latest run's figures.
// LastSuccess is the zero time when no run has succeeded yet.
type MetricsTotals struct {
	Job, Resource                                         string
	Pages, Inserted, Updated, Unchanged, Skipped, Deleted int64
	SweepsSkipped                                         int64
	// PendingDeletes is what the last sweep of the job left pending
	// (docs/deletions.md, "Two passes").
	PendingDeletes       int64
	LastRun, LastSuccess time.Time
	LastDuration         time.Duration
	LastExitCode         int
}

// PriorPass is the previous full pass of a job whose sweep ran with proof:
// the rows it missed are the pending ones (docs/deletions.md, "Two
// passes").
type PriorPass struct {
	ID int64
	// StartedAt is when it started: a row written since (by it or a later
	// run) was seen, and is not pending.
	StartedAt time.Time
	// LiveBefore is the live rows the table held when it started (-1 when
	// unknown): max_delete_ratio is measured over the fewer of its and the
	// sweeping pass's.
	LiveBefore int64
	// Pending is the live rows its sweep missed and kept (-1 when
	// unknown): the rows whose removal the next proving pass decides.
	Pending int64
}
