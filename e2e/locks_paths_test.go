package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Twenty starts of one job at the same instant, reaching the job file
// and its state file through every path a careless setup gives them: the
// real path, a symlinked folder, ./job.yaml from its folder, a second job
// file with the same name: and state:, $IDEMSYNC_STATE through a
// symlinked .idemsync, --state relative to another working directory.
// The state file's lock is on its identity, so exactly one runs; every
// other exits 4 having sent no request (counted at the server), and the
// table equals the source (docs/operations.md, "Locks").
func TestTwentyStartsThroughManyPathsRunOnce(t *testing.T) {
	api := fakeapi.New(fakeapi.Options{Records: 100})
	g := &gate{h: api, n: "1", arrived: make(chan struct{}), open: make(chan struct{})}
	url := serve(t, g)
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.MkdirAll(filepath.Join(jobs, ".idemsync"), 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.db")
	job := writeJob(t, jobs, "job.yaml", styleJob("page", url, "sqlite:"+out))
	// The same name: and state: from another folder.
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	twin := writeJob(t, other, "twin.yaml", styleJob("page", url, "sqlite:"+out)+"state: ../jobs/.idemsync/state.db\n")
	if err := os.Symlink(jobs, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(jobs, ".idemsync"), filepath.Join(dir, "statelink")); err != nil {
		t.Fatal(err)
	}
	// Create the state file first, so that every start opens one file.
	if r := idemsync(t, dir, nil, "status", job); r.code != 0 {
		t.Fatalf("status: exit %d: %s", r.code, r.stderr)
	}
	type start struct {
		cwd  string
		env  []string
		args []string
	}
	var starts []start
	for i := 0; len(starts) < 20; i++ {
		switch i % 6 {
		case 0:
			starts = append(starts, start{dir, nil, []string{"run", job}})
		case 1:
			starts = append(starts, start{dir, nil, []string{"run", filepath.Join(dir, "link", "job.yaml")}})
		case 2:
			starts = append(starts, start{jobs, nil, []string{"run", "./job.yaml"}})
		case 3:
			starts = append(starts, start{dir, nil, []string{"run", twin}})
		case 4:
			starts = append(starts, start{other, []string{"IDEMSYNC_STATE=" + filepath.Join(dir, "statelink", "state.db")}, []string{"run", twin}})
		case 5:
			starts = append(starts, start{other, nil, []string{"run", "twin.yaml", "--state", "../link/.idemsync/state.db"}})
		}
	}
	results := make([]result, len(starts))
	var wg gosync.WaitGroup
	begin := make(chan struct{})
	for i, s := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-begin
			results[i] = idemsync(t, s.cwd, s.env, append(s.args, "--json")...)
		}()
	}
	close(begin)
	// The one that runs waits at page 1 until every other has exited.
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-g.arrived:
	case <-finished:
		t.Fatal("every start ended before one asked for page 1")
	case <-time.After(60 * time.Second):
		t.Fatal("no start asked for page 1")
	}
	time.Sleep(3 * time.Second) // the others find the lock taken and exit
	close(g.open)
	<-finished
	ran, locked := 0, 0
	for i, r := range results {
		switch r.code {
		case 0:
			ran++
		case 4:
			locked++
			if !strings.Contains(r.stdout, `"status":"locked"`) {
				t.Errorf("start %d (%v): exit 4 without status locked: %s", i, starts[i].args, r.stdout)
			}
		default:
			t.Errorf("start %d (%v in %s): exit %d: %s %s", i, starts[i].args, starts[i].cwd, r.code, r.stdout, r.stderr)
		}
	}
	if ran != 1 || locked != len(starts)-1 {
		t.Errorf("%d runs ran and %d exited 4, want 1 and %d", ran, locked, len(starts)-1)
	}
	// One pass: pages 1..4 and the empty page 5.
	if got := api.Requests("/page"); got != 5 {
		t.Errorf("%d requests to /page, want the 5 of one pass", got)
	}
	assertEqualSource(t, readSQLite(t, out), sourceRows(api))
	if _, err := os.Stat(filepath.Join(other, ".idemsync")); err == nil {
		t.Errorf("a state file was created beside the twin job file")
	}
}

// A holder stopped with SIGSTOP keeps the job: a second run exits 4 at
// once naming its pid, skip exits 0, status answers, and none of them
// sends a request; continued, the holder completes. A holder killed with
// SIGKILL at random points leaves no lock: a run started at once after
// never exits 4. The table ends equal to the source (docs/operations.md,
// "Locks", "Exit codes").
func TestStoppedAndKilledHolders(t *testing.T) {
	api := fakeapi.New(fakeapi.Options{Records: 300, Latency: 5 * time.Millisecond})
	g := &gate{h: api, n: "3", arrived: make(chan struct{}), open: make(chan struct{})}
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", serve(t, g), "sqlite:out.db"))
	c, errOut, done := startIdemsync(t, dir, nil, "run", job, "--quiet")
	g.reached(t, errOut, done)
	if err := c.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	before := api.TotalRequests()
	pid := "pid " + strconv.Itoa(c.Process.Pid)
	start := time.Now()
	r := idemsync(t, dir, nil, "run", job, "--json")
	if r.code != 4 || !strings.Contains(r.stdout, `"status":"locked"`) || !strings.Contains(r.stdout, pid) {
		t.Errorf("run while the holder is stopped: exit %d, want 4 naming %s: %s %s", r.code, pid, r.stdout, r.stderr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("run while the holder is stopped took %s to exit 4", d)
	}
	if r := idemsync(t, dir, nil, "run", job, "--if-running", "skip"); r.code != 0 || !strings.Contains(r.stdout, "skipped") {
		t.Errorf("skip while the holder is stopped: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if st := statusOf(t, dir, job); st.Status != "running" {
		t.Errorf("status while the holder is stopped: %q, want running", st.Status)
	}
	if got := api.TotalRequests(); got != before {
		t.Errorf("%d requests sent while the holder was stopped", got-before)
	}
	close(g.open)
	_ = c.Process.Signal(syscall.SIGCONT)
	if err := <-done; err != nil {
		t.Fatalf("holder after SIGCONT: %v: %s", err, errOut)
	}
	for i, d := range []time.Duration{40, 90, 150, 230} {
		c, _, done := startIdemsync(t, dir, nil, "run", job, "--quiet")
		time.Sleep(d * time.Millisecond)
		_ = c.Process.Signal(syscall.SIGKILL)
		<-done
		if r := idemsync(t, dir, nil, "run", job, "--json", "--max-pages", "1"); r.code == 4 {
			t.Errorf("kill %d after %s: the next run exited 4: %s", i, d*time.Millisecond, r.stdout)
		}
	}
	if r := idemsync(t, dir, nil, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("last run: exit %d: %s", r.code, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}
