package sync

import "github.com/idemsync/idemsync/contract"

// The state store's contract lives in contract/ (docs/architecture.md, "The
// state store"); the engine names its values by these aliases.
type (
	RunInfo    = contract.RunInfo
	JobState   = contract.JobState
	PageCommit = contract.PageCommit
	PageInfo   = contract.PageInfo
	DeadLetter = contract.DeadLetter
)

// Run kinds.
const (
	KindRun    = contract.KindRun
	KindReplay = contract.KindReplay
)

// Run statuses as stored (contract.RunInfo.Unfinished).
const (
	RunRunning     = contract.RunRunning
	RunInterrupted = contract.RunInterrupted
	RunFailed      = contract.RunFailed
	RunPartial     = contract.RunPartial
	RunCompleted   = contract.RunCompleted
	RunAbandoned   = contract.RunAbandoned
	RunRefused     = contract.RunRefused
)

// Job statuses reported by status.
const (
	JobNeverRun    = contract.JobNeverRun
	JobRunning     = contract.JobRunning
	JobInterrupted = contract.JobInterrupted
	JobPartial     = contract.JobPartial
	JobFailed      = contract.JobFailed
	JobCompleted   = contract.JobCompleted
)
