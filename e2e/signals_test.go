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

	"github.com/jackc/pgx/v5"

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
	// Its checkpoint is the last committed one, as the other objects'.
	if r.Checkpoint == "" || r.Checkpoint != st.Checkpoint {
		t.Errorf("after a second SIGTERM: checkpoint %q, the state's %q", r.Checkpoint, st.Checkpoint)
	}
}

// A first signal while the run waits for its busy state file, before any
// page, ends the wait: run, resume and replay exit 130 within moments,
// not after the state file's 10 s busy timeout, and their duration_ms is
// the command's time, the wait included (docs/operations.md, "Signals",
// "--json output").
func TestSignalsBusyStateDurationAndExit(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	_, url := startAPI(t, fakeapi.Options{Records: 100})
	for _, args := range [][]string{{"run"}, {"resume"}, {"replay", "--from", "1"}} {
		t.Run(args[0], func(t *testing.T) {
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
			runCode(t, dir, nil, 0, "run", job, "--max-pages", "1")
			release := hardHoldWriteLock(t, filepath.Join(dir, ".idemsync", "state.db"))
			defer release()
			start := time.Now()
			c, out := hardStart(t, dir, append([]string{args[0], job}, args[1:]...)...)
			time.Sleep(700 * time.Millisecond)
			signalled := time.Now()
			if err := c.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			code := hardWaitExit(t, c)
			took := time.Since(signalled)
			r := parseRun(t, result{stdout: out.String()})
			t.Logf("exit %d %s after the signal: %s", code, took.Round(time.Millisecond), out)
			if code != 130 || r.Status != "interrupted" {
				t.Errorf("exit %d, want 130: %+v", code, r)
			}
			if took > 4*time.Second {
				t.Errorf("exited %s after the signal: the wait for the busy state file did not end at it", took.Round(time.Millisecond))
			}
			if atSignal := signalled.Sub(start).Milliseconds(); r.DurationMS == nil || *r.DurationMS < atSignal {
				t.Errorf("the command had run %d ms when signalled: %s", atSignal, out)
			}
		})
	}
}

// A run that waited for the job's lock (--if-running wait) reports the
// command's time in duration_ms, the wait included (docs/operations.md,
// "--json output").
func TestSignalsIfRunningWaitDuration(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 2000, Latency: 100 * time.Millisecond})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	first, _ := hardStart(t, dir, "run", job)
	hardWaitRunning(t, dir, job)
	start := time.Now()
	second, out := hardStart(t, dir, "run", job, "--if-running", "wait")
	time.Sleep(1500 * time.Millisecond)
	api.SetLatency(0)
	waited := time.Since(start)
	if code := hardWaitExit(t, first); code != 0 {
		t.Fatalf("first run: exit %d", code)
	}
	if code := hardWaitExit(t, second); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, out)
	}
	r := parseRun(t, result{stdout: out.String()})
	if r.DurationMS == nil || *r.DurationMS < waited.Milliseconds() {
		t.Errorf("the command waited %d ms for the lock: %s", waited.Milliseconds(), out)
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

// --max-pages equal to the number of pages of a full pass that sweeps:
// whether the last page proves the end (pagination.total) or not (an
// empty page after a full one), each invocation's status says what the
// state holds (completed only when the pass and its sweep are done), and
// the chain of passes removes exactly the record the source lost, after
// two passes, never a live row (docs/deletions.md, "Two passes").
func TestSignalsMaxPagesExactSweep(t *testing.T) {
	for _, total := range []bool{true, false} {
		t.Run(map[bool]string{true: "total", false: "no-total"}[total], func(t *testing.T) {
			eachDelTarget(t, []string{"hard", "soft"}, func(t *testing.T, dir, mode string, tg delTarget) {
				api := newDelAPI(t, 30)
				body := delJob(api.URL, tg, mode, "", "state: "+tg.name+".db\n")
				if total {
					body = withTotal(body)
				}
				job := writeJob(t, dir, "job-"+tg.name+".yaml", body)
				passes := 0
				pass := func() {
					t.Helper()
					for i := 0; ; i++ {
						r := runCode(t, dir, nil, 0, "run", job, "--max-pages", "3")
						st := statusOf(t, dir, job)
						if st.LastRun == nil || st.LastRun.Status != r.Status || st.LastRun.RunID != r.RunID {
							t.Fatalf("--json says run %d %s, the state says %+v", r.RunID, r.Status, st.LastRun)
						}
						if r.Status == "completed" {
							passes++
							return
						}
						if r.Status != "partial" || i > 2 {
							t.Fatalf("invocation %d: %+v", i, r)
						}
					}
				}
				pass()
				api.remove(5)
				pass()
				if rows := tg.rows(t); len(liveIDs(rows)) != 30 {
					t.Fatalf("after one pass missing id 5: %d live rows, want 30 (pending)", len(liveIDs(rows)))
				}
				pass()
				live := liveIDs(tg.rows(t))
				if len(live) != 29 || live[5] {
					t.Fatalf("after two passes missing id 5: live %v", live)
				}
				for id := range api.live() {
					if !live[id] {
						t.Errorf("live record %d missing from the table", id)
					}
				}
			})
		})
	}
}

// SIGTERM while the sweep of a full pass waits on a PostgreSQL row lock
// another session holds: the run exits 130 interrupted, nothing is
// deleted, and the next run sweeps and completes, removing exactly the
// record the source lost.
func TestSignalsDuringSweepPostgres(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	u := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL")
	if u == "" {
		t.Skip("IDEMSYNC_TEST_POSTGRES_URL not set")
	}
	dir := t.TempDir()
	var tg delTarget
	for _, x := range delTargets(t, dir) {
		if x.name == "postgres" {
			tg = x
		}
	}
	api := newDelAPI(t, 30)
	job := writeJob(t, dir, "job.yaml", withTotal(delJob(api.URL, tg, "hard", "", "state: pg.db\n")))
	runCode(t, dir, nil, 0, "run", job)
	api.remove(5)
	runCode(t, dir, nil, 0, "run", job) // id 5 pending
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT id FROM "+tg.table+" WHERE id = 5 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	c, out := hardStart(t, dir, "run", job)
	// Wait until the sweep waits on the row lock.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var n int
		c2, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		err = c2.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%delete%' AND strpos(query, $1) > 0",
			strings.SplitN(tg.table, ".", 2)[0]).Scan(&n)
		c2.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sweep never waited on the lock: %s", out)
		}
	}
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	code := hardWaitExit(t, c)
	t.Logf("exit %d %s after SIGTERM: %s", code, time.Since(signalled).Round(time.Millisecond), out)
	r := parseRun(t, result{stdout: out.String()})
	if code != 130 || r.Status != "interrupted" || r.Deleted != 0 {
		t.Errorf("SIGTERM during the sweep: exit %d %+v", code, r)
	}
	_ = tx.Rollback(ctx)
	if rows := tg.rows(t); len(liveIDs(rows)) != 30 {
		t.Fatalf("after the interrupted sweep: %d live rows, want 30", len(liveIDs(rows)))
	}
	r = runCode(t, dir, nil, 0, "run", job)
	live := liveIDs(tg.rows(t))
	if r.Status != "completed" || r.RunID != parseRun(t, result{stdout: out.String()}).RunID || len(live) != 29 || live[5] {
		t.Errorf("the run continued after the interrupted sweep: %+v, live %d rows (5: %v)", r, len(live), live[5])
	}
}
