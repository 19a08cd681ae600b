package cmd

import (
	"context"
	"errors"
	"strings"

	"github.com/idemsync/idemsync/contract"
)

// Exit codes of the command line (docs/operations.md, "Exit codes"). They
// are stable: scripts, cron and n8n branch on them. This file is the one
// place a class of failure (contract.Class) becomes an exit code.
const (
	exitOK          = 0   // run completed or command succeeded
	exitPermanent   = 1   // permanent failure; checkpoint intact
	exitUsage       = 2   // invalid usage or job spec; nothing fetched
	exitTransient   = 3   // retries exhausted; checkpoint intact
	exitLocked      = 4   // another run of this job holds the lock
	exitNothing     = 5   // resume: nothing to resume
	exitInterrupted = 130 // SIGINT/SIGTERM after saving the checkpoint
)

// classCodes maps each class of failure to its exit code.
var classCodes = map[contract.Class]int{
	contract.None:            exitOK,
	contract.Permanent:       exitPermanent,
	contract.Invalid:         exitUsage,
	contract.Transient:       exitTransient,
	contract.Locked:          exitLocked,
	contract.NothingToResume: exitNothing,
	contract.Interrupted:     exitInterrupted,
}

// codeOf returns the exit code of class c (a class missing from the table
// is a permanent failure).
func codeOf(c contract.Class) int {
	if code, ok := classCodes[c]; ok {
		return code
	}
	return exitPermanent
}

// classOfCode returns the class whose exit code is code, Permanent for a
// code no class has: a resource's result read back from its exit code.
func classOfCode(code int) contract.Class {
	for c, n := range classCodes {
		if n == code {
			return c
		}
	}
	return contract.Permanent
}

// exitCode maps an error to its exit code: nil is 0, cobra's own errors
// (unknown command or flag, wrong argument count) are usage errors, any
// other error's class gives its code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		return exitUsage
	}
	return codeOf(contract.ClassOf(err))
}

// interrupted returns err, the failure of a command before any page, as
// an interruption when it is the signal's cancellation of ctx (the state
// file's open, integrity check or migrations, the job's lock, the target
// cut short): exit 130 as for a signal during a run, never exit 1
// (docs/operations.md, "Exit codes").
func interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) || contract.ClassOf(err) == contract.Interrupted {
		return err
	}
	return &contract.Error{Class: contract.Interrupted, Msg: "interrupted", Err: err}
}
