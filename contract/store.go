package contract

import (
	"context"
	"io"
	"time"
)

// Store is the durable state of jobs (docs/architecture.md, "The state
// store"): what the engine records page by page, what the runner keeps
// between the resources of a job file, and what the commands read and
// maintain. The SQLite state file (checkpoint.Store) implements it, and
// checkpoint/storetest is the suite every implementation passes.
//
// It is one interface, as river's driver is, so that a new store is one
// type checked once, by the compiler and by the suite. It is composed of
// the smaller interfaces below so that each consumer names the part it
// uses: the engine takes a RunStore (and its tests an in-memory one), the
// auth chain a TokenStore.
//
// Opening is not part of it: each store's package has its own Open, which
// creates or migrates its schema and refuses a state written by a newer
// idemsync; cmd/store.go is the one place that picks a store.
//
// The store holds the engine's values opaquely: a position, a checkpoint,
// a mark, a walk's identity and the inferred columns are strings the
// engine encodes and decodes (the engine owns those codecs), so every
// store keeps the same bytes and a state can move between stores.
//
// Errors are the engine's errors with exit codes: 1 for a store that is
// broken or refuses an operation, 3 for one that is busy (try again), 4
// from Lock while another holder has the job. A cancelled context stays
// visible in the error (errors.Is(err, context.Canceled)).
type Store interface {
	RunStore
	CycleStore
	MetricsStore
	TokenStore
	RunKeyStore
	Maintenance
}

// RunStore is the part of the Store the engine uses: the job's run lock,
// its runs, their committed pages and checkpoints, marks, dead letters and
// seen keys, and the end of full passes.
type RunStore interface {
	// Lock takes the job's run lock without waiting. While a holder has
	// it (another process, another Store on the same state, or this one),
	// it fails with exit code 4 naming the job and, when known, the holder. The lock dies with the
	// process that holds it. unlock releases it; it may be called more
	// than once, and Close releases the locks still held.
	Lock(ctx context.Context, job string) (unlock func(), err error)
	// Check verifies the store's integrity before a run writes to it: an
	// error (exit 1) names what is damaged.
	Check(ctx context.Context) error
	// Job returns the job's state; a job never seen returns a JobState with
	// only Name set. Holder names the lock's holder while one has it.
	Job(ctx context.Context, job string) (*JobState, error)
	// Jobs returns the state of every job in the store, by name.
	Jobs(ctx context.Context) ([]JobState, error)
	// Unfinished returns the job's latest run when it is unfinished, or nil.
	Unfinished(ctx context.Context, job string) (*RunInfo, error)
	// StartRun records a new run (status running) and returns its ID; the
	// run's Number counts the job's runs from 1.
	StartRun(ctx context.Context, r *RunInfo) (int64, error)
	// Reopen marks an unfinished run running again, owned by this store.
	Reopen(ctx context.Context, runID int64) error
	// CommitPage records a committed page in one transaction: the page
	// row, the run's counts and checkpoint, marks, columns, dead letters,
	// keys and the job's metrics counters all, or none of them. It refuses
	// a run that is not running (exit 1) and one another store reopened
	// since this one started or reopened it (exit 4, taken over).
	CommitPage(ctx context.Context, job string, p *PageCommit) error
	// FinishRun sets a run's final status and error. With status completed
	// and hwm != "", the job's saved mark becomes hwm.
	FinishRun(ctx context.Context, runID int64, status, errMsg, hwm string) error
	// ClearMark forgets the job's saved high-water mark.
	ClearMark(ctx context.Context, job string) error
	// DueFullPass makes the job's next run a full pass (JobState.FullDue),
	// leaving its saved mark as it is.
	DueFullPass(ctx context.Context, job string) error
	// AdoptIdentity stores identity for the run and the job where none is
	// stored (a state older than identities); it never overwrites one.
	AdoptIdentity(ctx context.Context, job string, runID int64, identity string) error
	// Pages returns the committed pages of a run in order.
	Pages(ctx context.Context, runID int64) ([]PageInfo, error)
	// Runs returns the job's latest n runs, newest first (n <= 0: all).
	Runs(ctx context.Context, job string, n int) ([]RunInfo, error)
	// DeadLetters returns the job's dead letters, newest first (n <= 0: all).
	DeadLetters(ctx context.Context, job string, n int) ([]DeadLetter, error)
	// SchemaChanges returns the columns the job's pages added or widened,
	// newest first (n <= 0: all).
	SchemaChanges(ctx context.Context, job string, n int) ([]SchemaChange, error)
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
	// LatestStart returns the latest start any run recorded in the store
	// (of any job; zero when none): the floor of the time line a run
	// stamps its writes on (docs/deletions.md, "One time line per job").
	LatestStart(ctx context.Context) (time.Time, error)
	// Close releases the locks still held and closes the store.
	io.Closer
}

// CycleStore keeps the open cycle of a job file's runner: the resources
// of one invocation that still have to run (docs/operations.md).
type CycleStore interface {
	// Cycle returns when the open cycle name began, and whether one is open.
	Cycle(ctx context.Context, name string) (time.Time, bool, error)
	// OpenCycle records that a cycle of name began at t, replacing any open one.
	OpenCycle(ctx context.Context, name string, t time.Time) error
	// CloseCycle forgets the open cycle of name (none open is no error).
	CloseCycle(ctx context.Context, name string) error
}

// MetricsStore keeps the metrics of every job and resource across runs
// (docs/operations.md, Metrics). The counters move with each page's
// CommitPage and with CompletePass; AddRunMetrics records how a command ended.
type MetricsStore interface {
	// AddRunMetrics records how a command on job and resource (for a
	// single-resource job, the job's name) ended and returns the totals,
	// in one transaction. A failure leaves the last success time as it was.
	AddRunMetrics(ctx context.Context, job, resource string, m RunMetrics) (MetricsTotals, error)
	// Metrics returns the totals of job and resource; zero with zero times
	// when none were recorded.
	Metrics(ctx context.Context, job, resource string) (MetricsTotals, error)
}

// TokenStore keeps the rotated OAuth2 refresh tokens of a job file
// durably, one per credential. pending marks an exchange that was sent and
// whose answer was not yet stored. Tokens are secrets: never printed.
type TokenStore interface {
	// LoadRefreshToken returns the stored token of credential ("" when none).
	LoadRefreshToken(ctx context.Context, job, credential, seedHash string) (token string, pending bool, err error)
	// SaveRefreshToken stores credential's token; it is durable when it returns.
	SaveRefreshToken(ctx context.Context, job, credential, seedHash, token string, pending bool) error
	// DropRefreshTokens removes the tokens of job whose credential is not
	// in keep, and those stored before tokens were kept per credential
	// whose seed is not in seeds; it returns how many it removed.
	DropRefreshTokens(ctx context.Context, job string, keep, seeds []string) (int, error)
}

// RunKeyStore remembers what the runs started under a run key ended with
// (docs/operations.md, "Run keys"): two starts with one key run once.
type RunKeyStore interface {
	// RunKey returns the result recorded under job and key (opaque to the
	// store: the command line's JSON), found false when none was.
	RunKey(ctx context.Context, job, key string) (result string, found bool, err error)
	// SaveRunKey records result under job and key at t; the first result
	// recorded stays.
	SaveRunKey(ctx context.Context, job, key, result string, t time.Time) error
}

// Maintenance is what prune and removed resources need.
type Maintenance interface {
	// Prune deletes the runs of job (and their pages) that finished more
	// than keep ago, in one transaction, except the job's latest run, its
	// latest completed run, its latest completed run of kind run and every
	// unfinished run; a pruned run with dead letters keeps its row.
	Prune(ctx context.Context, job string, keep time.Duration) (PruneStats, error)
	// Forget removes everything kept of job (runs, pages, dead letters,
	// marks, identity, lock note, stored tokens, cycles naming it), in one
	// transaction, except its metrics counters. It returns the runs removed.
	Forget(ctx context.Context, job string) (int64, error)
	// JobNames returns the names of the jobs in the store, sorted.
	JobNames(ctx context.Context) ([]string, error)
	// Compact gives the space that Prune and Forget freed back to the
	// file system where the store can (SQLite: VACUUM when the file has a
	// free page, and an emptied -wal file).
	Compact(ctx context.Context) error
	// Size is the bytes the state occupies, which prune reports before and
	// after (informative: a failure to measure is not an error).
	Size(ctx context.Context) int64
}
