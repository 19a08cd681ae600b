package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// --time-limit while another process keeps the state file busy from the
// middle of the run on: the page's checkpoint write is given up 5 s after
// the limit, the run's end 5 s after it began, and the run ends partial,
// exit 0, as a limit does: not failed with exit 3 once the busy timeout
// ran out. The object's checkpoint is the one the state holds, and the
// next run converges to the source (docs/operations.md, --time-limit).
func TestTimeLimitBusyStateMidRun(t *testing.T) {
	timeLimitBusyStateMidRun(t)
}

// The same with --run-key: the key's record, written after the run, waits
// for the busy file at most 1 s once the limit passed, as the metrics do
// (it is best effort: a second start with the key runs again).
func TestTimeLimitBusyStateRunKey(t *testing.T) {
	timeLimitBusyStateMidRun(t, "--run-key", "slot-1")
}

// timeLimitBusyStateMidRun runs a job with --time-limit 3s (and args),
// holds the state file's write lock after 4 pages and checks the exit,
// the time it took, the object and the next run.
func timeLimitBusyStateMidRun(t *testing.T, args ...string) {
	skipWithPostgresState(t, "holds the state file's write lock")
	api, url := startAPI(t, fakeapi.Options{Records: 1000, Latency: 100 * time.Millisecond})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	started := time.Now()
	p := startAfterPages(t, dir, cleanEnv(), 4, time.Minute, append([]string{"run", job, "--json", "--time-limit", "3s"}, args...)...)
	release := hardHoldWriteLock(t, filepath.Join(dir, ".idemsync", "state.db"))
	defer release()
	code, out, logs := p.wait(t)
	took := time.Since(started)
	t.Logf("exit %d after %s: %s\n%s", code, took.Round(time.Millisecond), out, logs)
	r := parseRun(t, result{stdout: out})
	if code != 0 || r.Status != "partial" {
		t.Errorf("exit %d status %q, want 0 partial", code, r.Status)
	}
	// 3 s of limit, 5 s of grace for the page's checkpoint, 5 s for the
	// run's end, 5 s for the retention, at most 1 s each for the metrics
	// and the lock's holder note and the run key (21 s); the busy timeout
	// (10 s a write) is not waited out (it was: 40 s).
	if took > 25*time.Second {
		t.Errorf("exited %s after the start: the state writes did not stop at the grace", took.Round(time.Millisecond))
	}
	if r.Pages < 4 || !strings.HasPrefix(r.Checkpoint, "page ") {
		t.Errorf("partial run: %+v", r)
	}
	release()
	if st := statusOf(t, dir, job); st.Checkpoint != r.Checkpoint {
		t.Errorf("the state holds checkpoint %q, the run object says %q", st.Checkpoint, r.Checkpoint)
	}
	if next := runCode(t, dir, nil, 0, "run", job); next.Status != "completed" {
		t.Errorf("next run: %+v", next)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}

// --time-limit counts from the command's start for a single job, as for a
// job file with several resources: a run that waited for the job's lock
// (--if-running wait) longer than its limit commits one page and stops,
// instead of running its whole limit after the wait and overrunning the
// slot a cron entry gave it (docs/operations.md, --time-limit).
func TestTimeLimitCountsTheLockWait(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 2000, Latency: 200 * time.Millisecond})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	first, firstOut := hardStart(t, dir, "run", job, "--time-limit", "4s")
	hardWaitRunning(t, dir, job)
	start := time.Now()
	second, out := hardStart(t, dir, "run", job, "--if-running", "wait", "--time-limit", "2s")
	if code := hardWaitExit(t, first); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, firstOut)
	}
	waited := time.Since(start)
	code := hardWaitExit(t, second)
	took := time.Since(start)
	t.Logf("waited %s for the lock, exit %d after %s: %s", waited.Round(time.Millisecond), code, took.Round(time.Millisecond), out)
	a, b := parseRun(t, result{stdout: firstOut.String()}), parseRun(t, result{stdout: out.String()})
	if code != 0 || b.Status != "partial" {
		t.Errorf("second run: exit %d status %q, want 0 partial", code, b.Status)
	}
	if waited < 2*time.Second {
		t.Fatalf("the second run waited %s for the lock, not past its limit: the test proves nothing", waited)
	}
	// The limit passed during the wait: one page (200 ms) after it, not
	// 2 s of pages.
	if n := b.Pages - a.Pages; n != 1 {
		t.Errorf("the second run committed %d pages after its limit passed in the wait, want 1 (first %+v, second %+v)", n, a, b)
	}
	if took > waited+1500*time.Millisecond {
		t.Errorf("the second run ended %s after the first released the lock: its --time-limit 2s had passed during the wait", (took - waited).Round(time.Millisecond))
	}
	if st := statusOf(t, dir, job); st.Checkpoint != b.Checkpoint {
		t.Errorf("the state holds checkpoint %q, the run object says %q", st.Checkpoint, b.Checkpoint)
	}
	api.SetLatency(0)
	if next := runCode(t, dir, nil, 0, "run", job); next.Status != "completed" {
		t.Errorf("next run: %+v", next)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}
