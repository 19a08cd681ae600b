package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// crashStats is what a crash loop observed.
type crashStats struct {
	kills       int // processes killed with SIGKILL mid-run
	completions int // runs that finished before their kill
	finalRuns   int // runs needed after the kills to reach exit 0
}

// crashLoop starts `idemsync run job` again and again, SIGKILLing each at a
// random moment, until kills processes were killed; then it runs until
// exit 0. extraEnv is added to every invocation.
func crashLoop(t *testing.T, dir, job string, kills int, seed uint64, minDelay, maxDelay time.Duration, extraEnv ...string) crashStats {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var st crashStats
	for st.kills < kills {
		c := exec.Command(binary, "run", job, "--quiet")
		c.Dir = dir
		c.Env = append(testEnv(dir, job), extraEnv...)
		var errOut bytes.Buffer
		c.Stderr = &errOut
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		delay := minDelay + time.Duration(rng.Int64N(int64(maxDelay-minDelay)))
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run exited on its own with %v before its kill: %s", err, errOut.String())
			}
			st.completions++
		case <-time.After(delay):
			_ = c.Process.Kill() // SIGKILL on Unix
			<-done
			st.kills++
		}
	}
	for {
		r := idemsync(t, dir, extraEnv, "run", job, "--quiet")
		st.finalRuns++
		if r.code == 0 {
			break
		}
		if st.finalRuns >= 5 {
			t.Fatalf("no convergence after %d runs: exit %d: %s", st.finalRuns, r.code, r.stderr)
		}
	}
	return st
}

// completedRuns counts the job's runs that completed, as status --runs
// reports them.
func completedRuns(t *testing.T, dir, job string) int {
	t.Helper()
	n := 0
	for _, r := range statusRuns(t, dir, job) {
		if r.Status == "completed" {
			n++
		}
	}
	return n
}

// statusRuns returns the job's runs as status --runs reports them.
func statusRuns(t *testing.T, dir, job string) []runJSON {
	t.Helper()
	r := idemsync(t, dir, nil, "status", job, "--json", "--runs", "1000")
	var out struct {
		Jobs []struct {
			Status string    `json:"status"`
			Runs   []runJSON `json:"runs"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Jobs) != 1 {
		t.Fatalf("status --json: %v: %s %s", err, r.stdout, r.stderr)
	}
	return out.Jobs[0].Runs
}

// SIGKILL at random moments, at least 20 times per style, then run to exit
// 0: the table equals the source exactly, and the number of page requests
// proves every run continued where the killed one stopped.
func TestCrashConvergence(t *testing.T) {
	const records, pageSize, kills = 5000, 25, 20
	for i, style := range []string{"page", "cursor", "cursor-url", "hwm"} {
		t.Run(style, func(t *testing.T) {
			api, url := startAPI(t, fakeapi.Options{Records: records, Latency: 3 * time.Millisecond, Seed: int64(i)})
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", styleJob(style, url, "sqlite:out.db"))
			seed := uint64(time.Now().UnixNano())
			st := crashLoop(t, dir, job, kills, seed, 15*time.Millisecond, 90*time.Millisecond)
			assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))

			// A full pass is records/pageSize pages plus, for page-number
			// and hwm styles, the empty or short page that ends it. A kill
			// wastes at most the page being committed (re-read if its rows
			// landed but not its checkpoint) and the one page fetched ahead
			// of it; starting over would cost every page done so far.
			fullPass := records/pageSize + 1
			if style == "hwm" { // each page re-reads the record at its mark
				fullPass = records/(pageSize-1) + 1
			}
			runs := statusRuns(t, dir, job)
			completed := 0
			for _, r := range runs {
				if r.Status == "completed" {
					completed++
				}
			}
			// A run may also complete just before its kill lands.
			if completed < st.completions+1 || completed > st.completions+1+st.kills {
				t.Errorf("%d completed runs in status, want %d to %d", completed, st.completions+1, st.completions+1+st.kills)
			}
			bound := completed*fullPass + 2*st.kills
			got := api.TotalRequests()
			t.Logf("style %s (seed %d): %d kills, %d runs completed before their kill, %d final run(s), %d runs recorded, %d requests (bound %d, one full pass %d)",
				style, seed, st.kills, st.completions, st.finalRuns, len(runs), got, bound, fullPass)
			if got > bound {
				t.Errorf("%d page requests, more than %d: a resumed run started over", got, bound)
			}
		})
	}
}

// SIGINT finishes or abandons the page in flight, saves the checkpoint,
// marks the run interrupted and exits 130; the next run continues it.
func TestInterruptSavesCheckpoint(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT on Windows")
	}
	api, url := startAPI(t, fakeapi.Options{Records: 1000, Latency: 20 * time.Millisecond})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	c := exec.Command(binary, "run", job, "--json")
	c.Dir = dir
	c.Env = testEnv(dir, job)
	var out bytes.Buffer
	c.Stdout = &out
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once a page is committed: a fixed sleep could signal a
	// process still starting on a loaded machine, before its handler is
	// installed (it then dies of SIGINT instead of exiting 130).
	committed, drained := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		once := gosync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), "page committed") {
				once.Do(func() { close(committed) })
			}
		}
	}()
	select {
	case <-committed:
	case <-time.After(2 * time.Minute):
		t.Fatal("no page committed in 2 minutes")
	}
	if err := c.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-drained // the process closed its stderr: Wait may close the pipe
	err = c.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130; stdout %s", err, out.String())
	}
	r := parseRun(t, result{stdout: out.String()})
	if r.Status != "interrupted" || r.Pages == 0 || !strings.HasPrefix(r.Checkpoint, "page ") {
		t.Errorf("interrupted run: %+v", r)
	}
	if runs := statusRuns(t, dir, job); len(runs) != 1 || runs[0].Status != "interrupted" {
		t.Errorf("status after SIGINT: %+v", runs)
	}
	api.ResetCounters()
	res := idemsync(t, dir, nil, "run", job, "--json")
	c2 := parseRun(t, res)
	if res.code != 0 || c2.RunID != r.RunID || c2.Status != "completed" {
		t.Fatalf("continue after SIGINT: %d %+v", res.code, c2)
	}
	if want := int(41 - r.Pages); api.TotalRequests() > want+1 {
		t.Errorf("continuing sent %d requests, want about %d", api.TotalRequests(), want)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	_ = syscall.SIGINT
}
