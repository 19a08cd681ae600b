package cmd

import "github.com/idemsync/idemsync/contract"

// Exit codes of `key --exit-codes` (docs/ledger.md, "Exit codes"): 0 when
// the call did what it was asked (claim: acquired; complete, fail,
// heartbeat, resolve: recorded; get: found), else one code per status, above
// the codes of failures (1-5) so a script tells "not mine to do" from
// "broken". Without --exit-codes every status exits 0.
var keyStatusCodes = map[string]int{
	contract.StatusCompleted:  10, // claim: done before; the stored result is replayed
	contract.StatusInProgress: 11,
	contract.StatusRetryLater: 12,
	contract.StatusFailed:     13,
	contract.StatusHeld:       14,
	contract.StatusMismatch:   15,
	contract.StatusStaleToken: 16,
	contract.StatusNotFound:   17,
	"invalid":                 exitUsage,
}

// keyExitCode is the exit code of status for the key subcommand action.
func keyExitCode(action, status string) int {
	switch {
	case status == contract.StatusAcquired, status == contract.StatusOK, status == "forgotten":
		return exitOK
	case action == "complete" && status == contract.StatusCompleted,
		action == "fail" && (status == contract.StatusFailed || status == contract.StatusRetryLater),
		action == "resolve" && status != contract.StatusNotFound,
		action == "get" && status != contract.StatusNotFound:
		return exitOK
	}
	if code, ok := keyStatusCodes[status]; ok {
		return code
	}
	return exitPermanent
}
