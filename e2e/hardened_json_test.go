package e2e

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// hardHoldWriteLock takes the state file's write lock from the test
// process, as another process writing would, until release is called.
func hardHoldWriteLock(t *testing.T, state string) (release func()) {
	t.Helper()
	db := openSQLite(t, state)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// A running sync may hold the write lock for a moment (a page commit):
	// wait for it rather than fail.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		_, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	return func() {
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
	}
}

// State file errors, a bad --log-format and a busy state file print the
// full run object under --json, with the job's name and the exit code;
// a busy state file exits 3.
func TestHardenedJSONOnStateErrors(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 30})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	runCode(t, dir, nil, 0, "run", job) // creates the state file
	state := filepath.Join(dir, ".idemsync", "state.db")

	other := filepath.Join(dir, "other.db")
	db := openSQLite(t, other)
	if _, err := db.Exec("CREATE TABLE t (x); PRAGMA application_id = 42"); err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(dir, "newer.db")
	if b, err := os.ReadFile(state); err == nil {
		_ = os.WriteFile(newer, b, 0o600)
	}
	if _, err := openSQLite(t, newer).Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		code int
		args []string
	}{
		{"not a state file", 1, []string{"run", job, "--state", other}},
		{"newer state file", 1, []string{"run", job, "--state", newer}},
		{"cannot open", 1, []string{"run", job, "--state", filepath.Join(dir, "job.yaml", "state.db")}},
		{"bad log format", 2, []string{"run", job, "--log-format", "xml"}},
		{"status of a foreign state file", 1, []string{"status", job, "--state", other}},
	}
	for _, tc := range cases {
		r := runCode(t, dir, nil, tc.code, tc.args...)
		if r.Job != "orders-page" || r.Status != "failed" || r.Error == "" {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}

	release := hardHoldWriteLock(t, state)
	// It waits out the busy timeout, shortened from its 10 s: this is about
	// the object printed, not the wait's length.
	r := runCode(t, dir, []string{"IDEMSYNC_TEST_LOCK_WAIT=1s"}, 3, "run", job)
	release()
	if r.Job != "orders-page" || r.Error == "" {
		t.Errorf("busy state file: %+v", r)
	}
	runCode(t, dir, nil, 0, "run", job)
}

// A second SIGTERM ends the run at once, exit 130, and --json still prints
// the full run object.
func TestHardenedDoubleSIGTERM(t *testing.T) {
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
		if st.LastRun != nil && st.LastRun.Pages >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no page committed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Keep the state file busy so that the first signal's checkpoint
	// save waits, then signal twice.
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
	if r.Job != "orders-page" || r.Status != "interrupted" || r.RunID == 0 || r.Pages == 0 {
		t.Errorf("after a second SIGTERM: %+v", r)
	}
	release()
	runCode(t, dir, nil, 0, "run", job)
}

// A SIGTERM while the run waits for the state file, before any page (its
// open, its migrations, the job's lock), is a signal like any other: exit
// 130 with status interrupted, not exit 1 "context canceled"
// (docs/operations.md, "Exit codes"). The model test found it (seeds 7209,
// 7218, 7219: a SIGINT 5-30 ms after the start).
func TestHardenedSIGTERMWhileOpeningState(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	_, url := startAPI(t, fakeapi.Options{Records: 30})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	runCode(t, dir, nil, 0, "run", job) // creates the state file
	release := hardHoldWriteLock(t, filepath.Join(dir, ".idemsync", "state.db"))
	defer release()
	c, out := hardStart(t, dir, "run", job)
	time.Sleep(500 * time.Millisecond) // waiting for the state file's lock
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	if code := hardWaitExit(t, c); code != 130 {
		t.Fatalf("exit %d, want 130: %s", code, out)
	}
	t.Logf("exit 130 %s after the signal", time.Since(sent).Round(time.Millisecond))
	r := parseRun(t, result{stdout: out.String()})
	if r.Job != "orders-page" || r.Status != "interrupted" {
		t.Errorf("a SIGTERM while opening the state file: %+v", r)
	}
	release()
	runCode(t, dir, nil, 0, "run", job)
}
