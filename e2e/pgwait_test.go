package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// pgLockTable holds ACCESS EXCLUSIVE on table from a second session until
// the returned release is called (also at cleanup).
func pgLockTable(t *testing.T, pgURL string, table pgx.Identifier) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table.Sanitize()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_ = tx.Rollback(ctx)
			conn.Close(ctx)
		}
	}
	t.Cleanup(release)
	return release
}

// pgWaiter polls until a backend waits for a lock on table and returns its
// pid; it fails the test after a minute. The run's check of the table's emptiness before its first page
// (SELECT EXISTS …) waits for the lock too, for at most two seconds; it is
// not the write this looks for.
func pgWaiter(t *testing.T, pgURL string, table pgx.Identifier) int32 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var pid int32
		err := conn.QueryRow(ctx, `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND l.relation = to_regclass($1) AND a.query NOT LIKE 'SELECT EXISTS%' LIMIT 1`,
			table.Sanitize()).Scan(&pid)
		if err == nil {
			return pid
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no session ever waited for the lock on " + table.Sanitize())
	return 0
}

// pgWaitSetup runs a job on PostgreSQL for one page, so its table exists
// and its run is unfinished at page 2.
func pgWaitSetup(t *testing.T, target string) (api *fakeapi.API, pg, dir, job string, table pgx.Identifier) {
	t.Helper()
	pg = postgresURL(t)
	api, url := startAPI(t, fakeapi.Options{Records: 200, Seed: 7})
	schema := freshSchema(t, pg)
	dir = t.TempDir()
	body := pgJob("page", url, pg, schema)
	body = strings.Replace(body, "  key: [id]\n", "  key: [id]\n"+target, 1)
	job = writeJob(t, dir, "job.yaml", body)
	if r := runCode(t, dir, nil, 0, "run", job, "--max-pages", "1"); r.Status != "partial" || r.Pages != 1 {
		t.Fatalf("first page: %+v", r)
	}
	return api, pg, dir, job, pgx.Identifier{schema, "orders"}
}

// pgStart starts `idemsync args… --json` and returns a function waiting
// for its end (at most two minutes, then it is killed and the test fails).
func pgStart(t *testing.T, dir string, args ...string) (*exec.Cmd, func() result) {
	t.Helper()
	c := exec.Command(binary, append(args, "--json")...)
	c.Dir = dir
	c.Env = cleanEnv()
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	t.Cleanup(func() { _ = c.Process.Kill() })
	return c, func() result {
		t.Helper()
		var err error
		select {
		case err = <-exited:
		case <-time.After(2 * time.Minute):
			_ = c.Process.Kill()
			<-exited
			t.Fatalf("idemsync %v still blocked after 2 minutes\nstderr: %s", args, errOut.String())
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{code: code, stdout: out.String(), stderr: errOut.String()}
	}
}

// With another session holding ACCESS EXCLUSIVE on the table, a run
// fails transient once target.timeout.lock passes, naming the lock, and
// keeps its checkpoint; the next run, with the lock gone, completes.
func TestPostgresLockTimeout(t *testing.T) {
	api, pg, dir, job, table := pgWaitSetup(t, "  timeout: {lock: 1s}\n")
	before := statusOf(t, dir, job).Checkpoint
	release := pgLockTable(t, pg, table)
	_, wait := pgStart(t, dir, "run", job)
	r := wait()
	got := parseRun(t, r)
	if r.code != 3 || !strings.Contains(got.Error, "lock") || !strings.Contains(r.stderr+got.Error, "target.timeout.lock") {
		t.Fatalf("blocked by a lock: exit %d, want 3 naming the lock: %+v\nstderr: %s", r.code, got, r.stderr)
	}
	if st := statusOf(t, dir, job); st.Checkpoint != before {
		t.Errorf("checkpoint moved from %q to %q", before, st.Checkpoint)
	}
	release()
	runCode(t, dir, nil, 0, "run", job)
	assertEqualSource(t, readPostgres(t, pg, table), sourceRows(api))
}

// With the lock held and default timeouts, the first SIGTERM cancels the
// blocked write after its grace: exit 130 with the full --json object, the
// page rolled back, the checkpoint at the last committed page.
func TestPostgresLockSIGTERM(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	api, pg, dir, job, table := pgWaitSetup(t, "")
	before := statusOf(t, dir, job).Checkpoint
	release := pgLockTable(t, pg, table)
	c, wait := pgStart(t, dir, "run", job)
	pgWaiter(t, pg, table)
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	r := wait()
	t.Logf("SIGTERM to exit while blocked on the lock: %s", time.Since(signalled).Round(10*time.Millisecond))
	got := parseRun(t, r)
	if r.code != 130 || got.Status != "interrupted" || got.RunID == 0 || got.Pages != 1 {
		t.Fatalf("SIGTERM while blocked: exit %d, want 130 interrupted: %+v\nstderr: %s", r.code, got, r.stderr)
	}
	if st := statusOf(t, dir, job); st.Checkpoint != before || st.Status != "interrupted" {
		t.Errorf("after SIGTERM: status %s checkpoint %q, want interrupted at %q", st.Status, st.Checkpoint, before)
	}
	release()
	runCode(t, dir, nil, 0, "run", job)
	assertEqualSource(t, readPostgres(t, pg, table), sourceRows(api))
}

// With the lock held, --time-limit ends the run partial (exit 0): the
// blocked write is cancelled after its grace and the run stays unfinished.
func TestPostgresLockTimeLimit(t *testing.T) {
	api, pg, dir, job, table := pgWaitSetup(t, "")
	before := statusOf(t, dir, job).Checkpoint
	release := pgLockTable(t, pg, table)
	started := time.Now()
	_, wait := pgStart(t, dir, "run", job, "--time-limit", "3s")
	r := wait()
	t.Logf("--time-limit 3s: start to exit while blocked on the lock: %s", time.Since(started).Round(10*time.Millisecond))
	got := parseRun(t, r)
	if r.code != 0 || got.Status != "partial" || got.Pages != 1 {
		t.Fatalf("--time-limit while blocked: exit %d, want 0 partial: %+v\nstderr: %s", r.code, got, r.stderr)
	}
	if st := statusOf(t, dir, job); st.Checkpoint != before {
		t.Errorf("checkpoint moved from %q to %q", before, st.Checkpoint)
	}
	release()
	r2 := runCode(t, dir, nil, 0, "run", job)
	if r2.RunID != got.RunID || r2.Status != "completed" {
		t.Errorf("the next run should continue run %d to the end: %+v", got.RunID, r2)
	}
	assertEqualSource(t, readPostgres(t, pg, table), sourceRows(api))
}

// The run's backend terminated by an administrator mid-write: a transient
// failure (exit 3) with the checkpoint intact; the next run converges.
func TestPostgresBackendTerminated(t *testing.T) {
	api, pg, dir, job, table := pgWaitSetup(t, "")
	before := statusOf(t, dir, job).Checkpoint
	release := pgLockTable(t, pg, table)
	_, wait := pgStart(t, dir, "run", job)
	pid := pgWaiter(t, pg, table)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	r := wait()
	got := parseRun(t, r)
	if r.code != 3 {
		t.Fatalf("backend terminated: exit %d, want 3: %+v\nstderr: %s", r.code, got, r.stderr)
	}
	if st := statusOf(t, dir, job); st.Checkpoint != before {
		t.Errorf("checkpoint moved from %q to %q", before, st.Checkpoint)
	}
	release()
	runCode(t, dir, nil, 0, "run", job)
	assertEqualSource(t, readPostgres(t, pg, table), sourceRows(api))
}

// With the lock held, a second SIGTERM right after the first ends the run
// at once: exit 130 and, with --json, the full run object on stdout.
func TestPostgresLockDoubleSIGTERM(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	api, pg, dir, job, table := pgWaitSetup(t, "")
	release := pgLockTable(t, pg, table)
	c, wait := pgStart(t, dir, "run", job)
	pgWaiter(t, pg, table)
	for i := 0; i < 2; i++ {
		if err := c.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := wait()
	got := parseRun(t, r)
	if r.code != 130 || got.Status != "interrupted" || got.RunID == 0 || got.Pages != 1 {
		t.Fatalf("two SIGTERMs while blocked: exit %d, want 130 interrupted: %+v\nstderr: %s", r.code, got, r.stderr)
	}
	release()
	runCode(t, dir, nil, 0, "run", job)
	assertEqualSource(t, readPostgres(t, pg, table), sourceRows(api))
}
