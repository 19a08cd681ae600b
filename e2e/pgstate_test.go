package e2e

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// pgStateURL is a state in schema of the test server, with a lease of
// the given length (docs/operations.md, "Leases").
func pgStateURL(t *testing.T, pg, schema, lease string) string {
	t.Helper()
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", schema)
	q.Set("lease", lease)
	u.RawQuery = q.Encode()
	return u.String()
}

// startIdemsync starts the binary in the background; the test ends it.
func startIdemsync(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, chan error) {
	t.Helper()
	c := exec.Command(binary, args...)
	c.Dir = dir
	c.Env = append(cleanEnv(), env...)
	var errOut bytes.Buffer
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Kill()
	})
	return c, &errOut, done
}

// SIGKILL mid-pass with the state in PostgreSQL, then resume: while the
// killed holder's lease runs the job is locked (exit 4, naming the
// holder); once it expired the next run continues, and the table equals
// the source exactly. status reads the state without showing its password.
func TestPostgresStateCrashResume(t *testing.T) {
	pg := postgresURL(t)
	state := pgStateURL(t, pg, freshSchema(t, pg), "1s")
	env := []string{"IDEMSYNC_STATE=" + state}
	api, apiURL := startAPI(t, fakeapi.Options{Records: 3000, Latency: 15 * time.Millisecond})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("cursor", apiURL, "sqlite:out.db"))
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed))
	lockedOut := 0
	for kills, starts := 0, 0; kills < 4 && starts < 10; starts++ {
		c, errOut, done := startIdemsync(t, dir, env, "run", job, "--quiet")
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run exited on its own (%v) before its kill (seed %d): %s", err, seed, errOut)
			}
			continue // it completed first: the next run starts a new pass
		case <-time.After(300*time.Millisecond + time.Duration(rng.Int64N(int64(600*time.Millisecond)))):
			_ = c.Process.Kill()
			<-done
			kills++
		}
		if r := idemsync(t, dir, env, "run", job, "--quiet", "--if-running", "fail"); r.code == 4 {
			lockedOut++
			if !strings.Contains(r.stderr, "locked by pid "+strconv.Itoa(c.Process.Pid)) {
				t.Errorf("exit 4 does not name the killed holder (pid %d): %s", c.Process.Pid, r.stderr)
			}
		} else if r.code != 0 {
			t.Fatalf("run right after a kill: exit %d (seed %d): %s", r.code, seed, r.stderr)
		}
		time.Sleep(1500 * time.Millisecond) // the dead holder's lease expires
	}
	if lockedOut == 0 {
		t.Errorf("no run right after a kill found the dead holder's lease (seed %d)", seed)
	}
	if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("final run: exit %d: %s", r.code, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	st := statusOf(t, dir, job, "--state", state)
	if st.LastRun == nil || st.LastRun.Status != "completed" {
		t.Errorf("status after the resumes: %+v", st)
	}
	pw, _ := mustURL(t, pg).User.Password()
	for _, args := range [][]string{{"status", job}, {"status", job, "--json"}, {"prune", job, "--json"}} {
		r := idemsync(t, dir, env, args...)
		if r.code != 0 || pw != "" && strings.Contains(r.stdout+r.stderr, pw) {
			t.Errorf("%v: exit %d, or the password is shown: %s %s", args, r.code, r.stdout, r.stderr)
		}
	}
	// prune's text speaks of the state's tables, not of a file with free
	// space it never rewrites.
	if r := idemsync(t, dir, env, "prune", job); r.code != 0 || strings.Contains(r.stdout, "state file") || !strings.Contains(r.stdout, "autovacuum") {
		t.Errorf("prune: exit %d, want a line about the state's tables: %s %s", r.code, r.stdout, r.stderr)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// gate holds the first request for page n until it is opened, and says
// when that request arrived.
type gate struct {
	h       http.Handler
	n       string
	arrived chan struct{}
	open    chan struct{}
	once    gosync.Once
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("page") == g.n {
		held := false
		g.once.Do(func() { held = true })
		if held {
			close(g.arrived)
			// A test that fails before opening the gate kills its run in
			// cleanup: the held request then ends, and the server can close.
			select {
			case <-g.open:
			case <-r.Context().Done():
				return
			}
		}
	}
	g.h.ServeHTTP(w, r)
}

// reached waits until the run started with startIdemsync (its stderr
// errOut, its end done) asks for page g.n; it fails the test when the run
// ends first or has not asked within 30 seconds.
func (g *gate) reached(t *testing.T, errOut *bytes.Buffer, done <-chan error) {
	t.Helper()
	select {
	case <-g.arrived:
	case err := <-done:
		t.Fatalf("first run ended before page %s (%v): %s", g.n, err, errOut)
	case <-time.After(30 * time.Second):
		t.Fatalf("first run never asked for page %s", g.n)
	}
}

// Two hosts on one job with the state in PostgreSQL: while the first
// holds the lease the second exits 4 naming it; once the first is stopped
// (SIGSTOP: a pause or a partition) past its lease, the second takes the
// job over and completes it; the first, continued (SIGCONT), commits
// nothing more and exits 4, and the table equals the source.
func TestPostgresStateLeaseTakeover(t *testing.T) {
	pg := postgresURL(t)
	state := pgStateURL(t, pg, freshSchema(t, pg), "1s")
	env := []string{"IDEMSYNC_STATE=" + state}
	api := fakeapi.New(fakeapi.Options{Records: 600, Latency: 2 * time.Millisecond})
	g := &gate{h: api, n: "5", arrived: make(chan struct{}), open: make(chan struct{})}
	apiURL := serve(t, g)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", apiURL, "sqlite:out.db"))

	first, errOut, done := startIdemsync(t, dir, env, "run", job, "--quiet")
	g.reached(t, errOut, done)
	time.Sleep(300 * time.Millisecond) // the page before commits
	r := idemsync(t, dir, env, "run", job, "--quiet", "--if-running", "fail")
	if r.code != 4 || !strings.Contains(r.stderr, "locked by pid "+strconv.Itoa(first.Process.Pid)) {
		t.Fatalf("second run while the first holds the lease: exit %d, want 4 naming pid %d: %s", r.code, first.Process.Pid, r.stderr)
	}
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the first one's lease
	if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("second run after the first's lease expired: exit %d: %s", r.code, r.stderr)
	}
	_ = first.Process.Signal(syscall.SIGCONT)
	close(g.open)
	err := <-done
	if code := exitCode(err); code != 4 {
		t.Errorf("the first run, continued after the takeover: exit %d, want 4: %s", code, errOut)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	st := statusOf(t, dir, job, "--state", state)
	if st.LastRun == nil || st.LastRun.Status != "completed" {
		t.Errorf("status after the takeover: %+v", st)
	}
}

// exitCode is a finished process's exit code (0 for no error).
func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// SIGTERM releases the lease: a run stopped by it exits 130, and the next
// run, started at once with a lease far longer than the test, takes the
// job without waiting and completes it. The state is named by the job
// file's state: key here, with its password from the environment.
func TestPostgresStateSIGTERMReleases(t *testing.T) {
	pg := postgresURL(t)
	state := pgStateURL(t, pg, freshSchema(t, pg), "10m")
	u := mustURL(t, state)
	pw, _ := u.User.Password()
	u.User = url.UserPassword(u.User.Username(), "PLACEHOLDER")
	stateKey := strings.Replace(u.String(), "PLACEHOLDER", "${STATE_PW}", 1)
	env := []string{"STATE_PW=" + pw}
	api, apiURL := startAPI(t, fakeapi.Options{Records: 2000, Latency: 10 * time.Millisecond})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", "state: "+stateKey+"\n"+styleJob("cursor", apiURL, "sqlite:out.db"))
	c, errOut, done := startIdemsync(t, dir, env, "run", job, "--quiet")
	time.Sleep(time.Second)
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(<-done); code != 130 {
		t.Fatalf("run stopped by SIGTERM: exit %d, want 130: %s", code, errOut)
	}
	if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("run right after the SIGTERM: exit %d, want 0 (lease released): %s", r.code, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	if _, err := os.Stat(filepath.Join(dir, ".idemsync")); err == nil {
		t.Error("a state file was created beside the job file although state: names PostgreSQL")
	}
}

// A job file of several resources on a postgres state: the invocation
// holds the job file's lease and each resource run its own, and every
// write is fenced by both; the run completes every resource, a second run
// finds nothing new, and status lists every resource from the database.
func TestPostgresStateResources(t *testing.T) {
	pg := postgresURL(t)
	state := pgStateURL(t, pg, freshSchema(t, pg), "5s")
	s, apiURL := startShop(t, fakeapi.ShopOptions{Parents: 15, Seed: 6})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: apiURL, target: "sqlite:out.db", customers: true}.yaml())
	j := runJob(t, dir, 0, "run", job, "--state", state)
	if r := j.resource(t, "order_items"); r.Status != "completed" || r.Records != int64(len(s.AllChildren())) {
		t.Errorf("order_items: %+v, want %d records", r.runJSON, len(s.AllChildren()))
	}
	j = runJob(t, dir, 0, "run", job, "--state", state)
	for _, r := range j.Resources {
		if r.Status != "completed" || r.Inserted != 0 {
			t.Errorf("second run, resource %s: %+v", r.Resource, r.runJSON)
		}
	}
	if st := statusEntries(t, dir, job, "--state", state); len(st) != 3 || st["orders"].LastRun == nil {
		t.Errorf("status of the resources: %+v", st)
	}
}
