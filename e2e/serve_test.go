package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

const serveToken = "e2e-token-0123456789abcdef0123456789"

// serveProc is one `idemsync serve` subprocess.
type serveProc struct {
	url  string
	cmd  *exec.Cmd
	done chan error
}

// startServe starts `idemsync serve --jobs jobs` on a free loopback port
// with the bearer token set, and waits until /healthz answers.
func startServe(t *testing.T, dir, jobs string, env []string) *serveProc {
	t.Helper()
	return startServeToken(t, dir, jobs, env, serveToken)
}

// startServeToken is startServe with the token token ("": none).
func startServeToken(t *testing.T, dir, jobs string, env []string, token string) *serveProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if token != "" {
		env = append(env, "IDEMSYNC_SERVE_TOKEN="+token)
	}
	c, errOut, done := startIdemsync(t, dir, env, "serve", "--jobs", jobs, "--listen", addr, "--quiet")
	s := &serveProc{url: "http://" + addr, cmd: c, done: done}
	s.waitHealthy(t, errOut)
	return s
}

// waitHealthy waits until the server answers /healthz, failing the test
// when it exits first or takes over 20 s.
func (s *serveProc) waitHealthy(t *testing.T, errOut fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := http.Get(s.url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case err := <-s.done:
			t.Fatalf("serve exited: %v: %s", err, errOut)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("serve never answered /healthz")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// do sends one request with the token and returns the status and body.
func (s *serveProc) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	return s.doWith(t, method, path, body, map[string]string{"Authorization": "Bearer " + serveToken})
}

// doWith sends one request with the headers hdr ("Host" sets the Host
// header) and returns the status and body.
func (s *serveProc) doWith(t *testing.T, method, path, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// jobStatus is GET /jobs/NAME/status: the one job of status --json.
func (s *serveProc) jobStatus(t *testing.T, name string) jobStatusJSON {
	t.Helper()
	code, body := s.do(t, "GET", "/jobs/"+name+"/status", "")
	var out struct{ Jobs []jobStatusJSON }
	if err := json.Unmarshal([]byte(body), &out); code != 200 || err != nil || len(out.Jobs) != 1 {
		t.Fatalf("status: %d %v: %s", code, err, body)
	}
	return out.Jobs[0]
}

// serveRun is a run request in the background: its status and body.
type serveRun struct {
	code int
	body string
}

func (s *serveProc) runAsync(t *testing.T, name string) chan serveRun {
	out := make(chan serveRun, 1)
	go func() {
		code, body := s.do(t, "POST", "/jobs/"+name+"/run", "")
		out <- serveRun{code, body}
	}()
	return out
}

// The HTTP face runs the job as `run --json` does: a second request
// during the run starts nothing (409, locked, with the job's status), nor
// does a CLI run in another process (exit 4); SIGTERM interrupts the run
// (503, interrupted, checkpoint kept) and stops the server; after a
// restart the run continues and the table equals the source exactly. A
// CLI run holding the lock makes the server answer 409 with exit 4.
func TestServeRunStatusShutdown(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	for _, state := range []string{"sqlite", "postgres"} {
		t.Run(state, func(t *testing.T) {
			var env []string
			if state == "postgres" {
				pg := postgresURL(t)
				env = []string{"IDEMSYNC_STATE=" + pgStateURL(t, pg, freshSchema(t, pg), "5s")}
			}
			testServe(t, env)
		})
	}
}

func testServe(t *testing.T, env []string) {
	api, apiURL := startAPI(t, fakeapi.Options{Records: 3000, Latency: 25 * time.Millisecond})
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	job := writeJob(t, jobs, "orders.yaml", styleJob("page", apiURL, "sqlite:out.db"))
	s := startServe(t, dir, jobs, env)

	first := s.runAsync(t, "orders")
	deadline := time.Now().Add(30 * time.Second)
	for st := s.jobStatus(t, "orders"); st.Status != "running" || st.LastRun == nil || st.LastRun.Pages < 2; st = s.jobStatus(t, "orders") {
		if time.Now().After(deadline) {
			t.Fatalf("the run never showed running with pages: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, body := s.do(t, "POST", "/jobs/orders.yaml/run", "")
	var busy struct {
		Status    string
		ExitCode  int                            `json:"exit_code"`
		JobStatus struct{ Jobs []jobStatusJSON } `json:"job_status"`
	}
	if err := json.Unmarshal([]byte(body), &busy); err != nil || code != 409 || busy.Status != "locked" || busy.ExitCode != 4 ||
		len(busy.JobStatus.Jobs) != 1 || busy.JobStatus.Jobs[0].Status != "running" {
		t.Errorf("a second run request during the run: %d %s", code, body)
	}
	cli := runCode(t, dir, env, 4, "run", job, "--if-running", "fail")
	if cli.Status != "locked" {
		t.Errorf("a CLI run during the server's: %+v", cli)
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	got := <-first
	interrupted := parseRun(t, result{stdout: got.body})
	if got.code != 503 || interrupted.Status != "interrupted" || interrupted.RunID == 0 || interrupted.Pages == 0 ||
		!strings.Contains(got.body, `"exit_code":130`) {
		t.Errorf("the run at SIGTERM: %d %s", got.code, got.body)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}

	api.SetLatency(0)
	s = startServe(t, dir, jobs, env)
	if st := s.jobStatus(t, "orders"); st.Status != "interrupted" || st.Checkpoint == "" {
		t.Errorf("after SIGTERM: status %s checkpoint %q, want interrupted with a checkpoint", st.Status, st.Checkpoint)
	}
	code, body = s.do(t, "POST", "/jobs/orders/run", "")
	resumed := parseRun(t, result{stdout: body})
	if code != 200 || resumed.Status != "completed" || resumed.RunID != interrupted.RunID || !strings.Contains(body, `"resumed":true`) {
		t.Errorf("the run after restart: %d %s, want run %d continued and completed", code, body, interrupted.RunID)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(jobs, "out.db")), sourceRows(api))

	code, body = s.do(t, "GET", "/metrics", "")
	if code != 200 || !strings.Contains(body, `idemsync_pages_total{job="orders-page",resource="orders-page"}`) ||
		!strings.Contains(body, `idemsync_serve_run_in_progress{job="orders-page"} 0`) {
		t.Errorf("metrics: %d\n%s", code, body)
	}

	// A CLI run holding the state's lock: the server's run request is
	// refused by the same lock, exit 4.
	api.SetLatency(25 * time.Millisecond)
	c, _, _ := startIdemsync(t, dir, env, "run", job, "--restart", "--quiet")
	deadline = time.Now().Add(30 * time.Second)
	for s.jobStatus(t, "orders").Status != "running" {
		if time.Now().After(deadline) {
			t.Fatal("the CLI run never showed running")
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, body = s.do(t, "POST", "/jobs/orders/run", "")
	if locked := parseRun(t, result{stdout: body}); code != 409 || locked.Status != "locked" || !strings.Contains(body, `"exit_code":4`) {
		t.Errorf("a run request while a CLI run holds the lock: %d %s", code, body)
	}
	_ = c.Process.Kill()
}

// serve refuses to start, exit 2, where it would be open to anyone: off
// loopback without a token, with a short token, or without a folder.
func TestServeRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--jobs", dir, "--listen", "0.0.0.0:0"}, "IDEMSYNC_SERVE_TOKEN"},
		{nil, []string{"--jobs", dir, "--listen", ":0"}, "not a loopback address"},
		{[]string{"IDEMSYNC_SERVE_TOKEN=short"}, []string{"--jobs", dir, "--listen", "127.0.0.1:0"}, "at least 16"},
		{nil, []string{"--listen", "127.0.0.1:0"}, "--jobs"},
		{nil, []string{"--jobs", filepath.Join(dir, "missing")}, "missing"},
	} {
		r := idemsync(t, dir, c.env, append([]string{"serve"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("serve %v: exit %d, want 2 naming %q: %s", c.args, r.code, c.want, r.stderr)
		}
	}
}

// The deployment examples start a real server: the idemsync command of
// examples/serve/compose.yaml and of the sidecar in kubernetes.yaml, with
// their jobs folder pointed at a copy of examples/serve/jobs, answer
// /healthz and list the example job; and the example job file is valid.
func TestServeDeployExamples(t *testing.T) {
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../examples/serve/jobs/orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writeJob(t, jobs, "orders.yaml", string(example))
	if r := idemsync(t, dir, []string{"API_TOKEN=x"}, "validate", filepath.Join(jobs, "orders.yaml")); r.code != 0 {
		t.Errorf("the example job: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	for file, re := range map[string]string{
		"compose.yaml":    `command: (\[.*\])`,
		"kubernetes.yaml": `args: (\[.*\])`,
	} {
		data, err := os.ReadFile("../examples/serve/" + file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(re).FindSubmatch(data)
		var args []string
		if m == nil || json.Unmarshal(m[1], &args) != nil || len(args) == 0 || args[0] != "serve" {
			t.Fatalf("%s: no serve command line", file)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		for i := range args {
			switch args[i] {
			case "--jobs":
				args[i+1] = jobs
			case "--listen":
				_, port, _ := net.SplitHostPort(args[i+1])
				if port != "8787" {
					t.Errorf("%s listens on %s, not the documented 8787", file, args[i+1])
				}
				host, _, _ := net.SplitHostPort(args[i+1])
				_, free, _ := net.SplitHostPort(addr)
				args[i+1] = net.JoinHostPort(host, free)
				addr = net.JoinHostPort("127.0.0.1", free)
			}
		}
		c, errOut, done := startIdemsync(t, dir, []string{"IDEMSYNC_SERVE_TOKEN=" + serveToken}, args...)
		s := &serveProc{url: "http://" + addr, cmd: c, done: done}
		s.waitHealthy(t, errOut)
		if code, body := s.do(t, "GET", "/jobs", ""); code != 200 || !strings.Contains(body, `"orders"`) {
			t.Errorf("%s: jobs %d %s", file, code, body)
		}
		_ = c.Process.Kill()
	}
}
