package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// `resume JOB` continues the unfinished resource runs and nothing else;
// with none left it exits 5.
func TestResourcesResume(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 20, MaxChildren: 9, Seed: 19})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url}.yaml())
	first := runJob(t, dir, 0, "run", job, "--max-pages", "5").resource(t, "order_items")
	if first.Status == "completed" {
		t.Fatalf("order_items completed within 5 pages: %+v", first.runJSON)
	}
	s.ResetCounters()
	j := runJob(t, dir, 0, "resume", job)
	if r := j.resource(t, "order_items"); r.RunID != first.RunID || r.Status != "completed" {
		t.Errorf("resume: order_items run %d %s, want run %d completed", r.RunID, r.Status, first.RunID)
	}
	if n := s.Requests("/orders"); n != 0 {
		t.Errorf("resume walked the completed orders again (%d requests)", n)
	}
	assertShop(t, tgt, dir, s, false)
	if r := idemsync(t, dir, nil, "resume", job); r.code != 5 {
		t.Errorf("resume with nothing to resume: exit %d, want 5: %s", r.code, r.stderr)
	}
}

// `replay --resource orders --from 4` re-syncs the orders from page 4 on
// and walks no child; the orders it updated are changed parents, so the
// next run walks their items: a replay leaves no hole in the children.
func TestResourcesReplayParentThenChildren(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 30, MaxChildren: 6, Seed: 20})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url}.yaml())
	runJob(t, dir, 0, "run", job)

	s.AddChildren(25, 2) // order 25 is on page 4 (orders 22–28)
	s.ResetCounters()
	r := idemsync(t, dir, nil, "replay", job, "--resource", "orders", "--from", "4", "--json")
	if r.code != 0 {
		t.Fatalf("replay: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	for _, req := range s.RequestLog() {
		if req.Path != "/orders" {
			t.Errorf("replay of orders asked %s", req.Path)
			continue
		}
		if p, _ := strconv.Atoi(req.Query.Get("page")); p < 4 {
			t.Errorf("replay --from 4 asked orders page %q", req.Query.Get("page"))
		}
	}
	if d := diffTables(tgt.read(t, dir, "orders", 1, ordersCols...), wantOrders(s.Parents())); d != "" {
		t.Errorf("orders after the replay: %s", d)
	}

	s.ResetCounters()
	runJob(t, dir, 0, "run", job)
	if got := childRequestCounts(s); len(got) != 1 || got[25] == 0 {
		t.Errorf("the run after the replay fetched children of %v, want order 25's", got)
	}
	assertShop(t, tgt, dir, s, false)
}

// SIGINT during the child walk: the job exits 130 with order_items
// interrupted and orders completed; the next run continues the child run.
func TestResourcesInterrupted(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 30, MaxChildren: 9, Seed: 22, Latency: 20 * time.Millisecond})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url}.yaml())
	c := exec.Command(binary, "run", job, "--json")
	c.Dir, c.Env = dir, cleanEnv()
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); len(childRequestCounts(s)) < 5; {
		select {
		case <-done:
			t.Fatalf("exit %d before the child walk was under way: %s %s", c.ProcessState.ExitCode(), out.String(), errOut.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.Process.Kill()
			<-done
			t.Fatalf("the child walk never started: %s", errOut.String())
		}
	}
	if err := c.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-done
	j := parseJobRun(t, result{code: c.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()})
	if c.ProcessState.ExitCode() != 130 || j.ExitCode != 130 {
		t.Fatalf("exit %d (--json %d), want 130: %s", c.ProcessState.ExitCode(), j.ExitCode, errOut.String())
	}
	items := j.resource(t, "order_items")
	if j.resource(t, "orders").Status != "completed" || items.Status != "interrupted" || j.Status == "completed" {
		t.Errorf("after SIGINT: job %s, orders %s, order_items %s", j.Status, j.resource(t, "orders").Status, items.Status)
	}
	s.SetLatency(0)
	j = runJob(t, dir, 0, "run", job)
	if r := j.resource(t, "order_items"); r.RunID != items.RunID || r.Status != "completed" {
		t.Errorf("after SIGINT, order_items run %d %s, want run %d continued", r.RunID, r.Status, items.RunID)
	}
	assertShop(t, tgt, dir, s, false)
}

// SIGINT during the first resource of a round: the job exits 130 with it
// interrupted and the resources after it not run (the runner must not
// read the state file with the cancelled context to decide about them);
// the next run continues it and runs the rest.
func TestResourcesInterruptedBeforeNext(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 10, Customers: 20, MaxChildren: 3, Seed: 5, Latency: 20 * time.Millisecond})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, customers: true}.yaml())
	c := exec.Command(binary, "run", job, "--json")
	c.Dir, c.Env = dir, cleanEnv()
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	walking := make(chan struct{}, 1)
	s.OnRequest(func(r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/customers") {
			select {
			case walking <- struct{}{}:
			default:
			}
		}
	})
	t.Cleanup(func() { s.OnRequest(nil) })
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-walking:
	case <-time.After(30 * time.Second):
		_ = c.Process.Kill()
	}
	if err := c.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	s.OnRequest(nil)
	j := parseJobRun(t, result{code: c.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()})
	if c.ProcessState.ExitCode() != 130 || j.ExitCode != 130 || j.Status != "interrupted" {
		t.Fatalf("exit %d (--json %d, %s), want 130 interrupted: %s %s", c.ProcessState.ExitCode(), j.ExitCode, j.Status, out.String(), errOut.String())
	}
	customers := j.resource(t, "customers")
	if customers.Status != "interrupted" || j.resource(t, "orders").Status != "not_run" || j.resource(t, "order_items").Status != "not_run" {
		t.Errorf("after SIGINT: customers %s, orders %s, order_items %s", customers.Status, j.resource(t, "orders").Status, j.resource(t, "order_items").Status)
	}
	s.SetLatency(0)
	j = runJob(t, dir, 0, "run", job)
	if r := j.resource(t, "customers"); r.RunID != customers.RunID || r.Status != "completed" {
		t.Errorf("after SIGINT, customers run %d %s, want run %d continued", r.RunID, r.Status, customers.RunID)
	}
	assertShop(t, tgt, dir, s, true)
}

// A second SIGTERM during the child walk ends the job at once, exit 130,
// and --json still prints the job's object: the resources done so far and
// the one in progress interrupted with its run.
func TestResourcesDoubleSIGTERM(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 30, MaxChildren: 9, Seed: 22, Latency: 20 * time.Millisecond})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url}.yaml())
	c, out := hardStart(t, dir, "run", job)
	for deadline := time.Now().Add(30 * time.Second); len(childRequestCounts(s)) < 5; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the child walk never started")
		}
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
	j := parseJobRun(t, result{code: 130, stdout: out.String()})
	if j.Job != "shop" || j.Status != "interrupted" || j.ExitCode != 130 || !strings.Contains(j.Error, "interrupted twice") {
		t.Errorf("after a second SIGTERM: %+v", j)
	}
	if o, items := j.resource(t, "orders"), j.resource(t, "order_items"); o.Status != "completed" || items.Status != "interrupted" || items.RunID == 0 {
		t.Errorf("orders %s, order_items %s (run %d): want completed, then interrupted with its run", o.Status, items.Status, items.RunID)
	}
	release()
	s.SetLatency(0)
	runJob(t, dir, 0, "run", job)
	assertShop(t, tgt, dir, s, false)
}
