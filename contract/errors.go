package contract

import (
	"errors"
	"fmt"
)

// Class is the kind of a failure. The command line maps each class to its
// exit code in one place (cmd/exitcode.go; docs/operations.md, "Exit
// codes"); nothing below cmd/ knows the codes.
type Class int

// Classes of failure.
const (
	// None is no failure: ClassOf(nil).
	None Class = iota
	// Permanent fails the same way when run again; the checkpoint is
	// intact. An *Error without a class is permanent.
	Permanent
	Invalid         // invalid usage or job spec; nothing fetched
	Transient       // may pass when run again (retries exhausted); checkpoint intact
	Locked          // another run of this job holds its lock
	NothingToResume // resume: the job has no unfinished run
	Interrupted     // SIGINT/SIGTERM after saving the checkpoint
)

var classNames = [...]string{"none", "permanent", "invalid", "transient", "locked", "nothing to resume", "interrupted"}

// String names the class ("transient").
func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class %d", int(c))
}

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

// Error is the one typed error of the project: it carries the class of the
// failure and a user-safe message, plus an optional hint telling the user what to do.
// Messages never contain secrets; wrapped causes are redacted before printing.
type Error struct {
	Class Class  // what kind of failure; Permanent when None
	Msg   string // user-safe message
	Hint  string // optional: what the user can do about it
	Err   error  // optional cause
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

// Errorf returns an *Error of class c with the formatted message.
// A %w verb in format wraps its argument as the cause.
func Errorf(c Class, format string, args ...any) *Error {
	return &Error{Class: c, Err: fmt.Errorf(format, args...)}
}

// ClassOf returns the class of err: None for nil, the sentinels' own,
// else the first *Error in the chain gives its class, and anything else
// is Permanent.
func ClassOf(err error) Class {
	var e *Error
	switch {
	case err == nil:
		return None
	case errors.Is(err, ErrLocked):
		return Locked
	case errors.Is(err, ErrNothingToResume):
		return NothingToResume
	case errors.Is(err, ErrInterrupted):
		return Interrupted
	case errors.As(err, &e) && e.Class != None:
		return e.Class
	}
	return Permanent
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
