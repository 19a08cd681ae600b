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
