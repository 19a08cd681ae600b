package e2e

import (
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A second SIGTERM prints the run object with the counts of the pages
// committed so far: records too, not only pages (docs/operations.md,
// "--json output": pages and records committed by the run so far).
func TestSignalsDoubleSIGTERMCounts(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	_, url := startAPI(t, fakeapi.Options{Records: 500, Latency: 30 * time.Millisecond})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	c, out := hardStart(t, dir, "run", job)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := statusOf(t, dir, job)
		if st.LastRun != nil && st.LastRun.Pages >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no page committed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	release := hardHoldWriteLock(t, filepath.Join(dir, ".idemsync", "state.db"))
	defer release()
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := hardWaitExit(t, c); code != 130 {
		t.Fatalf("exit %d, want 130: %s", code, out)
	}
	r := parseRun(t, result{stdout: out.String()})
	release()
	st := statusOf(t, dir, job)
	if st.LastRun == nil {
		t.Fatal("no run in status")
	}
	// The state holds the pages committed before the hold: the object
	// must say as much, and its records those pages' records.
	if r.Status != "interrupted" || r.Pages != st.LastRun.Pages || r.Records != st.LastRun.Records || r.Records != 25*r.Pages {
		t.Errorf("after a second SIGTERM: %+v\nstate: pages %d records %d", r, st.LastRun.Pages, st.LastRun.Records)
	}
}

// A signal while the run waits for a busy state file, before any page:
// once, it ends the wait with exit 130 and the run object; twice, the
// second still prints exactly one run object (docs/operations.md,
// "--json output": one object whatever happens).
func TestSignalsBeforeTheRunStarts(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	_, url := startAPI(t, fakeapi.Options{Records: 100})
	for _, twice := range []bool{false, true} {
		t.Run(map[bool]string{false: "once", true: "twice"}[twice], func(t *testing.T) {
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
			runCode(t, dir, nil, 0, "run", job, "--max-pages", "1")
			release := hardHoldWriteLock(t, filepath.Join(dir, ".idemsync", "state.db"))
			defer release()
			c, out := hardStart(t, dir, "run", job)
			time.Sleep(700 * time.Millisecond)
			signalled := time.Now()
			if err := c.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if twice {
				time.Sleep(200 * time.Millisecond)
				if err := c.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			code := hardWaitExit(t, c)
			t.Logf("exit %d %s after the signal: %s", code, time.Since(signalled).Round(time.Millisecond), out)
			if code != 130 {
				t.Errorf("exit %d, want 130", code)
			}
			r := parseRun(t, result{stdout: out.String()})
			if r.Status != "interrupted" || r.Job != "orders-page" {
				t.Errorf("run object: %+v", r)
			}
			release()
			if r := runCode(t, dir, nil, 0, "run", job); r.Status != "completed" || r.Records != 100 {
				t.Errorf("next run: %+v", r)
			}
		})
	}
}

// The same for a job file with several resources: a signal while the
// invocation waits for its busy state file exits 130, not 1.
func TestSignalsResourcesBeforeTheRunStarts(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 5, MaxChildren: 3, Seed: 7})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url}.yaml())
	runJob(t, dir, 0, "run", job)
	release := hardHoldWriteLock(t, filepath.Join(dir, ".idemsync", "state.db"))
	defer release()
	c, out := hardStart(t, dir, "run", job)
	time.Sleep(700 * time.Millisecond)
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := hardWaitExit(t, c)
	j := parseJobRun(t, result{code: code, stdout: out.String()})
	if code != 130 || j.ExitCode != 130 || j.Status != "interrupted" {
		t.Errorf("exit %d: %s", code, out)
	}
	release()
	runJob(t, dir, 0, "run", job)
	assertShop(t, tgt, dir, s, false)
}
