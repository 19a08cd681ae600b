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
	c := exec.Command(binary, "run", job, "--json")
	c.Dir = dir
	c.Env = append(testEnv(dir, job), env...)
	var out, errs bytes.Buffer
	c.Stdout = &out
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill() })
	four, drained := make(chan struct{}), make(chan struct{})
	var mu gosync.Mutex
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		n := 0
		for sc.Scan() {
			mu.Lock()
			errs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "page committed") {
				if n++; n == 4 {
					close(four)
				}
			}
		}
	}()
	select {
	case <-four:
	case <-time.After(2 * time.Minute):
		t.Fatal("4 pages not committed in 2 minutes")
	}
	release := hold(dir)
	defer release()
	// The next page is fetched (100 ms) and written to the target; its
	// checkpoint now waits for the state file.
	time.Sleep(time.Second)
	signalled := time.Now()
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// A write that never ends is killed, so the test fails instead of hanging.
	killer := time.AfterFunc(time.Minute, func() { _ = c.Process.Kill() })
	defer killer.Stop()
	<-drained
	code := hardWaitExit(t, c)
	took := time.Since(signalled)
	mu.Lock()
	logs := errs.String()
	mu.Unlock()
	t.Logf("exit %d %s after the signal: %s\n%s", code, took.Round(time.Millisecond), out.String(), logs)
	r := parseRun(t, result{stdout: out.String()})
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
