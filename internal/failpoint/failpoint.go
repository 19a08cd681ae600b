// Package failpoint is the crash tests' way to kill idemsync at a chosen
// step: Hit names the step a process has reached. Built with the build tag
// failpoint (the end-to-end tests build the binary so), IDEMSYNC_TEST_FAILPOINT=STEP[:N]
// makes the N-th Hit of STEP (default 1) kill the process (SIGKILL on Unix,
// TerminateProcess on Windows: no deferred code runs). Built without the tag,
// as the product binary is, Hit does nothing and the variable is never read.
//
// The steps: request (an HTTP attempt is about to be sent), fetched,
// target-committed, checkpoint-committed, and of a full pass's sweep:
// sweep-loaded (seen keys loaded, nothing removed), sweep-applied (rows
// removed, not committed), swept (committed, run not yet completed).
//
// In the same build, IDEMSYNC_TEST_STEP_LOG=FILE appends a line "STEP
// UNIXNANO" to FILE at every Hit: the rate-limit test reads when each
// request was sent (request is hit once the shared limiter let it go).
package failpoint
