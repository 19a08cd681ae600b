package e2e

import (
	"net"
	"net/url"
	"os/exec"
	"runtime"
	"strings"
	gosync "sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// freezer is a TCP proxy in front of PostgreSQL that can stop forwarding
// anything, as a frozen server or a dead network would.
type freezer struct {
	addr    string
	frozen  atomic.Bool
	waiting atomic.Int64 // client reads that arrived while frozen
	mu      gosync.Mutex
	thaw    chan struct{}
}

func startFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{addr: l.Addr().String(), thaw: make(chan struct{})}
	t.Cleanup(func() { l.Close(); f.unfreeze() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go f.serve(c, target)
		}
	}()
	return f
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.frozen.Load() {
		f.thaw = make(chan struct{})
		f.frozen.Store(true)
	}
}

func (f *freezer) unfreeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen.Load() {
		f.frozen.Store(false)
		close(f.thaw)
	}
}

// hold blocks while the proxy is frozen.
func (f *freezer) hold() {
	f.mu.Lock()
	ch, frozen := f.thaw, f.frozen.Load()
	f.mu.Unlock()
	if frozen {
		<-ch
	}
}

func (f *freezer) serve(c net.Conn, target string) {
	defer c.Close()
	f.hold()
	s, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer s.Close()
	pipe := func(dst, src net.Conn, fromClient bool) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if fromClient && f.frozen.Load() {
					f.waiting.Add(1)
				}
				f.hold()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
	}
	go pipe(s, c, true)
	pipe(c, s, false)
}

// frozenRun is a run whose target stopped answering mid-run.
type frozenRun struct {
	proxy    *freezer
	dir, job string
	pg       string
	table    pgx.Identifier
	api      *fakeapi.API
	cmd      *exec.Cmd
	wait     func() result
}

// freezeDuringRun starts a run through the proxy, freezes the proxy once
// the run committed a page and waits until the run sent the frozen server
// a statement.
func freezeDuringRun(t *testing.T, args ...string) *frozenRun {
	t.Helper()
	pg := postgresURL(t)
	u, err := url.Parse(pg)
	if err != nil || u.Host == "" {
		t.Skip("the test server URL is not a postgres://host:port URL")
	}
	fr := &frozenRun{pg: pg, proxy: startFreezer(t, u.Host)}
	proxied := *u
	proxied.Host = fr.proxy.addr
	var apiURL string
	fr.api, apiURL = startAPI(t, fakeapi.Options{Records: 400, Latency: 150 * time.Millisecond, Seed: 9})
	schema := freshSchema(t, pg)
	fr.table = pgx.Identifier{schema, "orders"}
	fr.dir = t.TempDir()
	fr.job = writeJob(t, fr.dir, "job.yaml", pgJob("page", apiURL, proxied.String(), schema))
	fr.cmd, fr.wait = pgStart(t, fr.dir, append([]string{"run", fr.job}, args...)...)
	deadline := time.Now().Add(time.Minute)
	for {
		if st := statusOf(t, fr.dir, fr.job); st.LastRun != nil && st.LastRun.Pages >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no page committed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fr.proxy.freeze()
	for fr.proxy.waiting.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run never wrote to the frozen server")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fr
}

// converge thaws the server, runs the job to the end and checks the table.
func (fr *frozenRun) converge(t *testing.T) {
	t.Helper()
	fr.proxy.unfreeze()
	runCode(t, fr.dir, nil, 0, "run", fr.job)
	assertEqualSource(t, readPostgres(t, fr.pg, fr.table), sourceRows(fr.api))
}

// A server that stops answering mid-write (frozen backend, dead network):
// the first SIGTERM still ends the run (exit 130, full --json object) once
// the write's grace passed; the page rolls back and the next run converges.
func TestPostgresFrozenSIGTERM(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	fr := freezeDuringRun(t)
	if err := fr.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	r := fr.wait()
	t.Logf("SIGTERM to exit with the server frozen: %s", time.Since(signalled).Round(10*time.Millisecond))
	got := parseRun(t, r)
	if r.code != 130 || got.Status != "interrupted" || got.Pages < 1 {
		t.Fatalf("SIGTERM with the server frozen: exit %d, want 130: %+v\nstderr: %s", r.code, got, r.stderr)
	}
	if !strings.Contains(r.stderr, "page write cancelled") {
		t.Errorf("no warning about the cancelled page write:\n%s", r.stderr)
	}
	fr.converge(t)
}

// The same with --time-limit: the run ends partial, exit 0.
func TestPostgresFrozenTimeLimit(t *testing.T) {
	fr := freezeDuringRun(t, "--time-limit", "2s")
	r := fr.wait()
	got := parseRun(t, r)
	if r.code != 0 || got.Status != "partial" {
		t.Fatalf("--time-limit with the server frozen: exit %d, want 0 partial: %+v\nstderr: %s", r.code, got, r.stderr)
	}
	fr.converge(t)
}
