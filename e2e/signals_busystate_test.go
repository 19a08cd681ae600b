package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A first SIGTERM while another process keeps the state file busy in the
// middle of a run (pages committed, the next page's checkpoint waiting for
// the file's write lock): the state writes wait at most the write grace,
// the process exits 130 with status interrupted, the object's checkpoint
// is the one the state holds, and the next run converges to the source
// (docs/operations.md, "Signals").
func TestSignalsBusyStateMidRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	skipWithPostgresState(t, "holds the state file's write lock")
	signalBusyStateMidRun(t, nil, nil, func(dir string) func() {
		return hardHoldWriteLock(t, filepath.Join(dir, ".idemsync", "state.db"))
	})
}

// The same with the state in PostgreSQL and another session holding a row
// lock on the run's row: the run's writes wait at most the grace too (the
// database has no busy timeout to end them).
func TestSignalsBusyPostgresStateMidRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	pg := postgresURL(t)
	schema := freshSchema(t, pg)
	state := pgStateURL(t, pg, schema, "30s")
	signalBusyStateMidRun(t, []string{"IDEMSYNC_STATE=" + state}, []string{"--state", state}, func(string) func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pg)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := tx.QueryRow(ctx, "SELECT id FROM "+pgx.Identifier{schema, "runs"}.Sanitize()+" ORDER BY id DESC LIMIT 1 FOR UPDATE").Scan(&id); err != nil {
			t.Fatal(err)
		}
		return func() {
			_ = tx.Rollback(ctx)
			_ = conn.Close(ctx)
		}
	})
}

// signalBusyStateMidRun runs a job (env: added to the environment; status:
// the arguments status needs to read its state), has hold keep the state
// busy after 4 pages committed, sends SIGTERM while the next page's
// checkpoint waits, and checks the exit, the object and the next run.
func signalBusyStateMidRun(t *testing.T, env, status []string, hold func(dir string) (release func())) {
	api, url := startAPI(t, fakeapi.Options{Records: 1000, Latency: 100 * time.Millisecond})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	p := startAfterPages(t, dir, append(testEnv(dir, job), env...), 4, 2*time.Minute, "run", job, "--json")
	release := hold(dir)
	defer release()
	// The next page is fetched (100 ms) and written to the target; its
	// checkpoint now waits for the state file.
	time.Sleep(time.Second)
	signalled := time.Now()
	if err := p.c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, out, logs := p.wait(t)
	took := time.Since(signalled)
	t.Logf("exit %d %s after the signal: %s\n%s", code, took.Round(time.Millisecond), out, logs)
	r := parseRun(t, result{stdout: out})
	if code != 130 || r.Status != "interrupted" {
		t.Errorf("exit %d status %q, want 130 interrupted", code, r.Status)
	}
	// 5 s of grace, then at most 1 s each for the metrics and the lock's
	// holder note.
	if took > 9*time.Second {
		t.Errorf("exited %s after the signal: the state writes did not stop at the grace", took.Round(time.Millisecond))
	}
	if r.Pages < 4 || !strings.HasPrefix(r.Checkpoint, "page ") {
		t.Errorf("interrupted run: %+v", r)
	}
	release()
	if st := statusOf(t, dir, job, status...); st.Checkpoint != r.Checkpoint {
		t.Errorf("the state holds checkpoint %q, the run object says %q", st.Checkpoint, r.Checkpoint)
	}
	next := runCode(t, dir, env, 0, "run", job)
	if next.Status != "completed" {
		t.Errorf("next run: %+v", next)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}

// pagesRun is the binary running, its stderr read line by line.
type pagesRun struct {
	c       *exec.Cmd
	out     bytes.Buffer
	mu      gosync.Mutex
	errs    bytes.Buffer
	drained chan struct{}
}

// startAfterPages starts the binary with args in dir with env and returns
// once it logged n pages committed; the test fails if that takes longer
// than within.
func startAfterPages(t *testing.T, dir string, env []string, n int, within time.Duration, args ...string) *pagesRun {
	t.Helper()
	p := &pagesRun{c: exec.Command(binary, args...), drained: make(chan struct{})}
	p.c.Dir = dir
	p.c.Env = env
	p.c.Stdout = &p.out
	stderr, err := p.c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.c.Process.Kill() })
	reached := make(chan struct{})
	go func() {
		defer close(p.drained)
		sc := bufio.NewScanner(stderr)
		pages := 0
		for sc.Scan() {
			p.mu.Lock()
			p.errs.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if strings.Contains(sc.Text(), "page committed") {
				if pages++; pages == n {
					close(reached)
				}
			}
		}
	}()
	select {
	case <-reached:
	case <-time.After(within):
		t.Fatalf("%d pages not committed in %s", n, within)
	}
	return p
}

// wait waits for the run to exit and returns its exit code, stdout and
// stderr. A run that never ends is killed a minute on, so the test fails
// instead of hanging.
func (p *pagesRun) wait(t *testing.T) (code int, stdout, stderr string) {
	t.Helper()
	killer := time.AfterFunc(time.Minute, func() { _ = p.c.Process.Kill() })
	defer killer.Stop()
	<-p.drained
	code = hardWaitExit(t, p.c)
	p.mu.Lock()
	defer p.mu.Unlock()
	return code, p.out.String(), p.errs.String()
}
