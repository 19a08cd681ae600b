package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A full pass that changes hands at its sweep: host A (the state in
// PostgreSQL, a lease of 1s) has committed every page of its pass, which
// missed record 5 as the proving pass before it did, and is paused
// (SIGSTOP) at its sweep, before the sweep's transaction begins or inside
// it with the keys loaded, past its lease. Record 5 comes back at the
// source, unchanged; host B takes the job over with run --restart, whose
// pass sees 5 (its row, unchanged, is not written) and completes. A,
// continued, must not sweep: its lease is gone, and the row of 5 is live
// (docs/deletions.md, "A pass that changes hands"; docs/operations.md,
// "Leases"). Before the fix A's sweep removed (hard) or marked (soft) the
// row of 5, then failed to record itself, exit 4: a live row gone.
func TestSweepTakenOverFenced(t *testing.T) {
	pg := postgresURL(t)
	skipOwnPostgresState(t)
	for _, c := range []struct{ mode, step string }{
		{"hard", "sweep"}, {"soft", "sweep"}, {"hard", "sweep-loaded"}, {"soft", "sweep-loaded"},
	} {
		t.Run(c.mode+"_"+map[string]string{"sweep": "before", "sweep-loaded": "inside"}[c.step], func(t *testing.T) {
			for i, name := range []string{"sqlite", "postgres"} {
				if c.step == "sweep-loaded" && name == "sqlite" {
					// Inside the sweep's transaction a SQLite target holds
					// its write lock: B cannot write, nothing is taken over.
					continue
				}
				t.Run(name, func(t *testing.T) {
					dir := t.TempDir()
					sweepTakenOver(t, pg, dir, c.mode, c.step, delTargets(t, dir)[i])
				})
			}
		})
	}
}

func sweepTakenOver(t *testing.T, pg, tdir, mode, step string, tg delTarget) {
	api := newDelAPI(t, 30)
	job := writeJob(t, tdir, "job.yaml", withTotal(delJob(api.URL, tg, mode, "", "")))
	state := pgStateURL(t, pg, freshSchema(t, pg), "1s")
	env := []string{"IDEMSYNC_STATE=" + state}

	if r := idemsync(t, tdir, env, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("first pass: exit %d: %s", r.code, r.stderr)
	}
	gone := api.remove(5)
	if r := idemsync(t, tdir, env, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("second pass (5 pending): exit %d: %s", r.code, r.stderr)
	}
	if live := liveIDs(tg.rows(t)); !live[5] {
		t.Fatalf("after one pass missed it, 5 must be pending, not gone")
	}

	steps, hold := filepath.Join(tdir, "steps.log"), filepath.Join(tdir, "hold")
	a, errOut, done := startIdemsync(t, tdir, append(env, "IDEMSYNC_TEST_FAILPOINT="+step,
		"IDEMSYNC_TEST_FAILPOINT_HOLD="+hold, "IDEMSYNC_TEST_STEP_LOG="+steps), "run", job, "--quiet")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(steps)
		if strings.Contains(string(b), "\n"+step+" ") || strings.HasPrefix(string(b), step+" ") {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("host A ended before its sweep: exit %d: %s", exitCode(err), errOut)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("host A never reached %s: %s", step, errOut)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := a.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	api.restore(gone...)                // back at the source, unchanged
	time.Sleep(1500 * time.Millisecond) // past A's lease
	if r := idemsync(t, tdir, env, "run", job, "--restart", "--quiet"); r.code != 0 {
		t.Fatalf("host B's pass (--restart): exit %d: %s", r.code, r.stderr)
	}
	sameIDs(t, "after host B's pass", liveIDs(tg.rows(t)), api.live())

	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = a.Process.Signal(syscall.SIGCONT)
	var code int
	select {
	case err := <-done:
		code = exitCode(err)
	case <-time.After(60 * time.Second):
		t.Fatalf("host A did not end after SIGCONT: %s", errOut)
	}
	// Whatever A's exit, no live row may be gone.
	sameIDs(t, fmt.Sprintf("after host A continued (exit %d)", code), liveIDs(tg.rows(t)), api.live())
	t.Logf("host A: exit %d: %s", code, errOut)
	if code != 4 {
		t.Errorf("host A, continued after the takeover: exit %d, want 4: %s", code, errOut)
	}
}
