// Package failpoint is the crash tests' way to kill idemsync at a chosen
// step: Hit names the step a process has reached. Built with the build tag
// failpoint (the end-to-end tests build the binary so), IDEMSYNC_TEST_FAILPOINT=STEP[:N]
// makes the N-th Hit of STEP (default 1) kill the process (SIGKILL on Unix,
// TerminateProcess on Windows: no deferred code runs). Built without the tag,
// as the product binary is, Hit does nothing and the variable is never read.
//
// The steps: request (an HTTP attempt is about to be sent), fetched,
// target-committed, checkpoint-committed, and of a full pass's sweep:
// sweep (about to begin the sweep's transaction), sweep-loaded (seen keys loaded, nothing removed), sweep-applied (rows
// removed, not committed), swept (committed, run not yet completed).
//
// With IDEMSYNC_TEST_FAILPOINT_HOLD=FILE the armed hit does not kill: it
// waits there until FILE exists, then goes on (a test pauses the process
// at that step, e.g. SIGSTOPs it past its lease, and lets it continue).
//
// In the same build, IDEMSYNC_TEST_STEP_LOG=FILE appends a line "STEP
// UNIXNANO" to FILE at every Hit: the rate-limit test reads when each
// request was sent (request is hit once the shared limiter let it go).
//
// In the same build, IDEMSYNC_TEST_CLOCK_OFFSET=DURATION (e.g. -10m) shifts
// Now, the clock a run takes its start and its writes' times from: two
// invocations with different offsets are two hosts whose clocks disagree.
//
// In the same build, IDEMSYNC_TEST_LOCK_WAIT=DURATION (e.g. 1s) replaces the
// state's 10 s wait for a lock another process holds (LockWait): the state
// file's busy timeout and the PostgreSQL ledger's lock wait. A test that
// only needs such a wait to end (exit 3, nothing claimed) sets it shorter;
// the product binary always waits its 10 s.
package failpoint
