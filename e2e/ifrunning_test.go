package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// stateKinds are the states a test of the run lock runs against: the
// SQLite file beside the job, and a state in PostgreSQL (skipped without
// IDEMSYNC_TEST_POSTGRES_URL).
var stateKinds = []string{"sqlite", "postgres"}

// stateEnv is the environment of the state named by stateEnvs' key.
func stateEnv(t *testing.T, name string) []string {
	t.Helper()
	if name != "postgres" {
		return nil
	}
	pg := postgresURL(t)
	return []string{"IDEMSYNC_STATE=" + pgStateURL(t, pg, freshSchema(t, pg), "2s")}
}

// skipJSON is the status of run --if-running skip.
type skipJSON struct {
	Job        string  `json:"job"`
	Status     string  `json:"status"`
	ExitCode   int     `json:"exit_code"`
	Holder     string  `json:"holder"`
	LeaseUntil *string `json:"lease_until"`
	Reason     string  `json:"reason"`
}

// While one run holds the job: a second run by default skips (exit 0, a
// status naming the holder, and on a lease its expiry); --if-running fail,
// resume and replay exit 4; wait=DUR exits 4 after DUR; wait starts once the holder ends.
// Bad values are usage errors (docs/operations.md, "A second host").
func TestIfRunning(t *testing.T) {
	for _, name := range stateKinds {
		t.Run(name, func(t *testing.T) {
			env := stateEnv(t, name)
			api := fakeapi.New(fakeapi.Options{Records: 100, Latency: 2 * time.Millisecond})
			g := &gate{h: api, n: "3", arrived: make(chan struct{}), open: make(chan struct{})}
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", styleJob("page", serve(t, g), "sqlite:out.db"))
			if r := idemsync(t, dir, env, "run", job, "--if-running", "maybe"); r.code != 2 || !strings.Contains(r.stderr, "--if-running") {
				t.Errorf("--if-running maybe: exit %d, want 2 naming the flag: %s", r.code, r.stderr)
			}
			first, errOut, done := startIdemsync(t, dir, env, "run", job, "--quiet")
			g.reached(t, errOut, done)
			pid := "pid " + strconv.Itoa(first.Process.Pid)

			// By default a state file keeps exit 4; a PostgreSQL state skips.
			if name != "postgres" {
				if j := runCode(t, dir, env, 4, "run", job); j.Status != "locked" {
					t.Errorf("second run by default on a state file: %+v, want locked", j)
				}
			}
			args := []string{"run", job, "--json"}
			if name != "postgres" {
				args = append(args, "--if-running", "skip")
			}
			r := idemsync(t, dir, env, args...)
			var sk skipJSON
			if err := json.Unmarshal([]byte(r.stdout), &sk); err != nil || r.code != 0 {
				t.Fatalf("second run by default: exit %d, %v: %s %s", r.code, err, r.stdout, r.stderr)
			}
			if sk.Status != "skipped" || sk.ExitCode != 0 || sk.Job != "orders-page" || !strings.Contains(sk.Holder, pid) {
				t.Errorf("skip status %+v does not name the holder %s", sk, pid)
			}
			if (sk.LeaseUntil != nil) != (name == "postgres") {
				t.Errorf("skip status on %s: lease_until %v", name, sk.LeaseUntil)
			}
			plain := append([]string{"run", job}, args[3:]...) // without --json
			if r := idemsync(t, dir, env, plain...); r.code != 0 || !strings.Contains(r.stdout, "skipped") {
				t.Errorf("second run without --json: exit %d: %s %s", r.code, r.stdout, r.stderr)
			}
			if j := runCode(t, dir, env, 4, "run", job, "--if-running", "fail"); j.Status != "locked" {
				t.Errorf("--if-running fail: %+v", j)
			}
			// resume and replay never skip, on a lease either: exit 4.
			// (Not fatal: the first run waits for g.open below.)
			for _, a := range [][]string{{"resume", job}, {"replay", job, "--from", "1"}} {
				if r := idemsync(t, dir, env, append(a, "--json")...); r.code != 4 || !strings.Contains(r.stdout, `"status":"locked"`) {
					t.Errorf("%s while the first run holds the job: exit %d, want 4 (locked): %s", a[0], r.code, r.stdout)
				}
			}
			start := time.Now()
			runCode(t, dir, env, 4, "run", job, "--if-running", "wait=400ms")
			if d := time.Since(start); d < 400*time.Millisecond {
				t.Errorf("--if-running wait=400ms gave up after %s", d)
			}

			_, waitOut, waitDone := startIdemsync(t, dir, env, "run", job, "--if-running", "wait", "--quiet")
			select {
			case err := <-waitDone:
				t.Fatalf("--if-running wait ended while the first run held the job (%v): %s", err, waitOut)
			case <-time.After(700 * time.Millisecond):
			}
			close(g.open)
			if err := <-done; err != nil {
				t.Fatalf("first run: %v: %s", err, errOut)
			}
			if err := <-waitDone; err != nil {
				t.Fatalf("--if-running wait after the first ended: %v: %s", err, waitOut)
			}
			var stateArgs []string
			if len(env) > 0 {
				stateArgs = []string{"--state", strings.TrimPrefix(env[0], "IDEMSYNC_STATE=")}
			}
			runs := statusOf(t, dir, job, stateArgs...)
			if runs.LastRun == nil || runs.LastRun.Status != "completed" || runs.LastRun.RunID < 2 {
				t.Errorf("the waiting run did not run after the first: %+v", runs.LastRun)
			}
			assertEqualSource(t, readSQLite(t, dir+"/out.db"), sourceRows(api))
		})
	}
}

// Two starts with one run key run once: the second, after the first
// finished or while it runs (--if-running wait), reports the first's
// result, exit 0, and fetches nothing; $IDEMSYNC_RUN_KEY is the same key;
// another key runs.
func TestRunKey(t *testing.T) {
	for _, name := range stateKinds {
		t.Run(name, func(t *testing.T) {
			env := stateEnv(t, name)
			api := fakeapi.New(fakeapi.Options{Records: 60, Latency: 2 * time.Millisecond})
			g := &gate{h: api, n: "2", arrived: make(chan struct{}), open: make(chan struct{})}
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", styleJob("page", serve(t, g), "sqlite:out.db"))
			key := "2026-11-26T10:00:00Z"

			// Started together: one runs, the other waits and reports it.
			_, errOut, done := startIdemsync(t, dir, env, "run", job, "--run-key", key, "--quiet")
			g.reached(t, errOut, done)
			secondDone := make(chan result, 1)
			go func() {
				secondDone <- idemsync(t, dir, append(env, "IDEMSYNC_RUN_KEY="+key), "run", job, "--if-running", "wait", "--json")
			}()
			time.Sleep(500 * time.Millisecond)
			close(g.open)
			if err := <-done; err != nil {
				t.Fatalf("first run: %v: %s", err, errOut)
			}
			requests := api.TotalRequests()
			r := <-secondDone
			second := parseRun(t, r)
			var extra struct {
				RunKey   string `json:"run_key"`
				Repeated bool   `json:"repeated"`
			}
			_ = json.Unmarshal([]byte(r.stdout), &extra)
			if r.code != 0 || second.RunID != 1 || second.Status != "completed" || extra.RunKey != key || !extra.Repeated {
				t.Errorf("second start with the key: exit %d, %+v %+v: %s", r.code, second, extra, r.stderr)
			}
			// After the first finished, by flag.
			again := runCode(t, dir, env, 0, "run", job, "--run-key", key)
			if again.RunID != 1 || again.Records != second.Records {
				t.Errorf("a later start with the key: %+v, want the first's result %+v", again, second)
			}
			if got := api.TotalRequests(); got != requests {
				t.Errorf("the repeated starts sent %d requests", got-requests)
			}
			if other := runCode(t, dir, env, 0, "run", job, "--run-key", "next"); other.RunID != 2 || other.Status != "completed" {
				t.Errorf("another key: %+v, want run 2", other)
			}
			if r := idemsync(t, dir, env, "run", job, "--run-key", "a\nb"); r.code != 2 {
				t.Errorf("a run key with a newline: exit %d, want 2: %s", r.code, r.stderr)
			}
			assertEqualSource(t, readSQLite(t, dir+"/out.db"), sourceRows(api))
		})
	}
}

// A run of a job file with several resources that was killed holds the
// file's lease and its resource's own; the two expire apart (each renewed
// on its own beat), the resource's last when it was taken last. A run with
// --if-running wait waits for both: it does not take the file's lease and
// then exit 4 on the resource's, as it did when a loaded host spread the
// killed run's two leases far apart (docs/operations.md, "A second host").
func TestIfRunningWaitsForAResourceLease(t *testing.T) {
	pg := postgresURL(t)
	env := []string{"IDEMSYNC_STATE=" + pgStateURL(t, pg, freshSchema(t, pg), "3s")}
	api := fakeapi.New(fakeapi.Options{Records: 30})
	srv := serve(t, api)
	dir := t.TempDir()
	job := writeJob(t, dir, "two.yaml", `name: two
defaults:
  pagination: {style: page, size_param: per_page, size: 10}
  target: {url: "sqlite:out.db", key: [id], columns: {id: {path: id, type: integer}, name: name}}
resources:
  - name: first
    source: {url: "`+srv+`/page", records: data}
    target: {table: first}
  - name: second
    source: {url: "`+srv+`/page", records: data}
    target: {table: second}
`)
	if r := idemsync(t, dir, env, "run", job); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	// The leases of a holder that died: the file's runs out first.
	schema := mustURL(t, strings.TrimPrefix(env[0], "IDEMSYNC_STATE=")).Query().Get("schema")
	pgExec(t, pg, `UPDATE `+schema+`.leases SET holder = 'pid 1 on elsewhere', expires_at = clock_timestamp() + CASE job
		WHEN 'two' THEN interval '300 milliseconds' ELSE interval '2500 milliseconds' END`)
	start := time.Now()
	r := idemsync(t, dir, env, "run", job, "--if-running", "wait=30s", "--json")
	if r.code != 0 {
		t.Fatalf("run --if-running wait=30s after a holder of the file and its resource died: exit %d, want 0: %s %s", r.code, r.stdout, r.stderr)
	}
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("the run ended after %s, before the resource's lease expired", d)
	}
	// A lease that outlasts the wait still ends it with exit 4.
	pgExec(t, pg, `UPDATE `+schema+`.leases SET holder = 'pid 1 on elsewhere', expires_at = clock_timestamp() + CASE job
		WHEN 'two' THEN interval '100 milliseconds' ELSE interval '1 minute' END`)
	if r := idemsync(t, dir, env, "run", job, "--if-running", "wait=1s", "--json"); r.code != 4 || !strings.Contains(r.stdout, "is locked by pid 1 on elsewhere") {
		t.Errorf("run --if-running wait=1s under a resource's lease of a minute: exit %d, want 4 naming the holder: %s %s", r.code, r.stdout, r.stderr)
	}
}
