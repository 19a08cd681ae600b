package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A first SIGTERM after a full pass's sweep committed, while another
// process keeps the state file busy: the pass's state writes (the sweep's
// record, the pass's completion) wait at most the write grace like every
// other write of the run, the process exits 130 interrupted with the
// checkpoint the state holds, and the next run finishes the pass and
// converges to the source (docs/operations.md, "Signals").
func TestSignalsBusyStateAfterSweep(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	skipWithPostgresState(t, "holds the state file's write lock")
	api := newDelAPI(t, 40)
	dir := t.TempDir()
	tg := delTargets(t, dir)[0]
	job := writeJob(t, dir, "job.yaml", withTotal(delJob(api.URL, tg, "hard", "", "")))
	runCode(t, dir, nil, 0, "run", job)
	api.remove(3, 17)
	// The pass after the removal keeps the two rows pending; the next one,
	// held after its sweep, removes them.
	runCode(t, dir, nil, 0, "run", job)

	steps, holdFile := filepath.Join(dir, "steps.log"), filepath.Join(dir, "hold")
	c := exec.Command(binary, "run", job, "--json")
	c.Dir = dir
	c.Env = append(cleanEnv(), "IDEMSYNC_TEST_FAILPOINT=swept",
		"IDEMSYNC_TEST_FAILPOINT_HOLD="+holdFile, "IDEMSYNC_TEST_STEP_LOG="+steps)
	var out, errs bytes.Buffer
	c.Stdout, c.Stderr = &out, &errs
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill() })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(steps); strings.Contains("\n"+string(b), "\nswept ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never committed its sweep")
		}
	}
	release := hardHoldWriteLock(t, filepath.Join(dir, ".idemsync", "state.db"))
	defer release()
	signalled := time.Now()
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(holdFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	killer := time.AfterFunc(time.Minute, func() { _ = c.Process.Kill() })
	defer killer.Stop()
	code := hardWaitExit(t, c)
	took := time.Since(signalled)
	t.Logf("exit %d %s after the signal: %s\n%s", code, took.Round(time.Millisecond), out.String(), errs.String())
	r := parseRun(t, result{stdout: out.String()})
	if code != 130 || r.Status != "interrupted" {
		t.Errorf("exit %d status %q, want 130 interrupted", code, r.Status)
	}
	// 5 s of grace, then at most 1 s each for the metrics and the lock's
	// holder note.
	if took > 9*time.Second {
		t.Errorf("exited %s after the signal: the pass's state writes did not stop at the grace", took.Round(time.Millisecond))
	}
	release()
	if st := statusOf(t, dir, job); st.Checkpoint != r.Checkpoint {
		t.Errorf("the state holds checkpoint %q, the run object says %q", st.Checkpoint, r.Checkpoint)
	}
	if next := runCode(t, dir, nil, 0, "run", job); next.Status != "completed" {
		t.Errorf("next run: %+v", next)
	}
	sameIDs(t, "after the next run", liveIDs(tg.rows(t)), api.live())
}
