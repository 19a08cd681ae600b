package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// hardStart starts `idemsync args… --json` in dir and returns the command
// and its stdout; the caller waits for it.
func hardStart(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(binary, append(args, "--json")...)
	c.Dir = dir
	c.Env = testEnv(dir, args...)
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c, &out
}

// hardWaitRunning polls status until the job's run holds its lock.
func hardWaitRunning(t *testing.T, dir, job string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st := statusOf(t, dir, job); st.Status == "running" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the first run never showed as running")
}

// hardWaitExit waits for c and returns its exit code.
func hardWaitExit(t *testing.T, c *exec.Cmd) int {
	t.Helper()
	err := c.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// A second run reaching the same state file through a symlink, or after
// the lock files were deleted, exits 4 and changes nothing; the first run
// completes with its status intact.
func TestHardenedLockFollowsStateFile(t *testing.T) {
	for _, tc := range []string{"symlink", "lock-file-deleted"} {
		t.Run(tc, func(t *testing.T) {
			// The first run must still hold its lock when the second one
			// starts, however loaded the machine: 80 pages, and each page
			// asked while the second run goes takes 300ms (21s at least).
			api, url := startAPI(t, fakeapi.Options{Records: 2000, Latency: 60 * time.Millisecond})
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
			state := filepath.Join(dir, ".idemsync", "state.db")
			first, out := hardStart(t, dir, "run", job, "--state", state)
			hardWaitRunning(t, dir, job)
			api.SetLatency(300 * time.Millisecond)
			second := []string{"run", job, "--if-running", "fail"}
			switch tc {
			case "symlink":
				link := filepath.Join(t.TempDir(), "state-link.db")
				if err := os.Symlink(state, link); err != nil {
					t.Skip("no symlinks:", err)
				}
				second = append(second, "--state", link)
			case "lock-file-deleted":
				locks, _ := filepath.Glob(filepath.Join(dir, ".idemsync", "*.lock"))
				for _, l := range locks {
					if err := os.Remove(l); err != nil {
						t.Fatal(err)
					}
				}
			}
			r := runCode(t, dir, nil, 4, second...)
			if r.Status != "locked" || r.Job != "orders-page" {
				t.Errorf("second run: %+v", r)
			}
			api.SetLatency(0)
			if code := hardWaitExit(t, first); code != 0 {
				t.Fatalf("first run exit %d: %s", code, out)
			}
			if f := parseRun(t, result{stdout: out.String()}); f.Status != "completed" {
				t.Errorf("first run: %+v", f)
			}
			st := statusOf(t, dir, job)
			if st.Status != "completed" || st.LastRun == nil || st.LastRun.Status != "completed" || st.LastRun.Error != "" {
				t.Errorf("status after both: %+v %+v", st, st.LastRun)
			}
			assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
			// A later run works: no "page repeats the previous page".
			runCode(t, dir, nil, 0, "run", job)
		})
	}
}

// replay and run --restart with the target down fail before touching the
// unfinished run: resume then continues it.
func TestHardenedAbandonOnlyWhenTargetUp(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 200})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	p := runCode(t, dir, nil, 0, "run", job, "--max-pages", "2")
	target := filepath.Join(dir, "out.db")
	if err := os.Rename(target, target+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(target, 0o700); err != nil { // a folder: no database opens there
		t.Fatal(err)
	}
	for _, args := range [][]string{{"replay", job, "--from", "1"}, {"run", job, "--restart"}} {
		r := idemsync(t, dir, nil, append(args, "--json")...)
		if r.code == 0 {
			t.Fatalf("%v with the target down: exit 0: %s", args, r.stdout)
		}
		st := statusOf(t, dir, job)
		if st.LastRun == nil || st.LastRun.RunID != p.RunID || st.LastRun.Status == "abandoned" {
			t.Fatalf("%v with the target down touched the unfinished run: %+v", args, st.LastRun)
		}
	}
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(target+".away", target); err != nil {
		t.Fatal(err)
	}
	c := runCode(t, dir, nil, 0, "resume", job)
	if c.RunID != p.RunID || c.Status != "completed" || c.Pages != 9 {
		t.Errorf("resume after the target came back: %+v (partial run %+v)", c, p)
	}
	assertEqualSource(t, readSQLite(t, target), sourceRows(api))
}

// status says partial after an intended --max-pages stop, and after a
// replay still shows the last real sync beside it; runs are numbered per
// job.
func TestHardenedStatusPartialAndLastSync(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 200})
	dir := t.TempDir()
	other := writeJob(t, dir, "other.yaml", strings.Replace(styleJob("page", url, "sqlite:other.db"), "name: orders-page", "name: other", 1))
	runCode(t, dir, nil, 0, "run", other) // takes run id 1 in the shared state file
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	p := runCode(t, dir, nil, 0, "run", job, "--max-pages", "2")
	if st := statusOf(t, dir, job); st.Status != "partial" || st.LastRun == nil || st.LastRun.Status != "partial" {
		t.Fatalf("status after --max-pages: %+v", st)
	}
	done := runCode(t, dir, nil, 0, "run", job)
	if done.RunID != p.RunID || done.Status != "completed" {
		t.Fatalf("run after partial did not continue it: %+v", done)
	}
	runCode(t, dir, nil, 0, "replay", job, "--from", "2", "--to", "3")
	r := idemsync(t, dir, nil, "status", job, "--json")
	var out struct {
		Jobs []struct {
			Status  string `json:"status"`
			LastRun *struct {
				RunID     int64  `json:"run_id"`
				RunNumber int64  `json:"run_number"`
				Kind      string `json:"kind"`
			} `json:"last_run"`
			LastSync *struct {
				RunID     int64  `json:"run_id"`
				RunNumber int64  `json:"run_number"`
				Kind      string `json:"kind"`
				Status    string `json:"status"`
			} `json:"last_sync"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Jobs) != 1 {
		t.Fatalf("status --json: %v %s", err, r.stdout)
	}
	j := out.Jobs[0]
	if j.LastRun == nil || j.LastRun.Kind != "replay" || j.LastRun.RunNumber != 2 {
		t.Errorf("last_run after a replay: %+v", j.LastRun)
	}
	if j.LastSync == nil || j.LastSync.RunID != p.RunID || j.LastSync.RunNumber != 1 || j.LastSync.Kind != "run" || j.LastSync.Status != "completed" {
		t.Errorf("last_sync after a replay: %+v (sync run id %d)", j.LastSync, p.RunID)
	}
	text := idemsync(t, dir, nil, "status", job)
	if !strings.Contains(text.stdout, "last sync     #1 (id 2) run completed") {
		t.Errorf("status table lacks the last sync:\n%s", text.stdout)
	}
}
