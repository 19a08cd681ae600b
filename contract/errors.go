package contract

import (
	"errors"
	"fmt"
)

// Exit codes of the command line contract (docs/operations.md, "Exit codes"). They are stable: scripts,
// cron and n8n branch on them.
const (
	ExitOK          = 0   // run completed or command succeeded
	ExitPermanent   = 1   // permanent failure; checkpoint intact
	ExitUsage       = 2   // invalid usage or job spec; nothing fetched
	ExitTransient   = 3   // retries exhausted; checkpoint intact
	ExitLocked      = 4   // another run of this job holds the lock
	ExitNothing     = 5   // resume: nothing to resume
	ExitInterrupted = 130 // SIGINT/SIGTERM after saving the checkpoint
)

// Sentinel errors the engine and its backends share.
var (
	// ErrLocked is returned when another process holds the job's run lock.
	ErrLocked = errors.New("another run of this job is in progress")
	// ErrNothingToResume is returned by a resume when the job has no unfinished run.
	ErrNothingToResume = errors.New("nothing to resume")
	// ErrInterrupted is returned when a run stopped on SIGINT/SIGTERM after
	// saving its checkpoint.
	ErrInterrupted = errors.New("interrupted")
)

// Error is the one typed error of the project: it carries the exit code and a
// user-safe message, plus an optional hint telling the user what to do.
// Messages never contain secrets; wrapped causes are redacted before printing.
type Error struct {
	Code int    // exit code, one of the Exit* constants
	Msg  string // user-safe message
	Hint string // optional: what the user can do about it
	Err  error  // optional cause
	// Status is the HTTP status of the response that failed, 0 when the
	// error is not an HTTP status.
	Status int
}

func (e *Error) Error() string {
	switch {
	case e.Msg != "" && e.Err != nil:
		return e.Msg + ": " + e.Err.Error()
	case e.Msg != "":
		return e.Msg
	case e.Err != nil:
		return e.Err.Error()
	}
	return "error"
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given exit code and formatted message.
// A %w verb in format wraps its argument as the cause.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// ExitCode maps any error to its exit code in one place: nil is 0, an *Error
// anywhere in the chain gives its code, the sentinels give theirs, and anything
// else is a permanent failure (1).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	switch {
	case errors.Is(err, ErrLocked):
		return ExitLocked
	case errors.Is(err, ErrNothingToResume):
		return ExitNothing
	case errors.Is(err, ErrInterrupted):
		return ExitInterrupted
	case errors.As(err, &e):
		return e.Code
	}
	return ExitPermanent
}

// Hint returns the first user hint found in err's chain, or "".
func Hint(err error) string {
	for err != nil {
		if e, ok := err.(*Error); ok && e.Hint != "" {
			return e.Hint
		}
		err = errors.Unwrap(err)
	}
	return ""
}
