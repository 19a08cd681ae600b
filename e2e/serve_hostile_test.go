package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A server without a token (loopback only) is reached by every process of
// the machine, and by any web page its user's browser opens: a page of
// another site can POST to 127.0.0.1 (a "simple" request, text/plain,
// no preflight), and a DNS-rebinding page (evil.example resolving to
// 127.0.0.1) even reads the replies, so it could take a consumer's batch
// ID and acknowledge it (the events lost to that consumer), or claim a
// ledger key for 1000 hours. Both are refused, 403, and nothing moves;
// curl, n8n and scripts (no Origin, a loopback Host) are served as before
// (docs/serve.md, "Security").
func TestServeNoTokenRefusesBrowsers(t *testing.T) {
	_, api := startAPI(t, fakeapi.Options{Records: 20})
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJob(t, jobs, "orders.yaml", changesSpec(t, "sqlite", dir, api))
	s := startServeToken(t, dir, jobs, nil, "")
	port := strings.TrimPrefix(s.url, "http://127.0.0.1:")
	if code, body := s.doWith(t, "POST", "/jobs/orders/run", "", nil); code != 200 {
		t.Fatalf("run: %d %s", code, body)
	}
	code, body := s.doWith(t, "POST", "/jobs/orders/changes", `{"consumer":"mail"}`, map[string]string{"Host": "localhost:" + port})
	var b feed.Batch
	if err := json.Unmarshal([]byte(body), &b); code != 200 || err != nil || b.ID == "" || len(b.Events) != 20 {
		t.Fatalf("the consumer's batch (Host localhost): %d %v %s", code, err, body)
	}
	rebound := map[string]string{"Host": "evil.example:" + port, "Origin": "http://evil.example:" + port,
		"Sec-Fetch-Site": "same-origin", "Content-Type": "text/plain"}
	crossSite := map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}
	for _, c := range []struct {
		what, method, path, body string
		hdr                      map[string]string
	}{
		{"a DNS-rebinding page reads the feed's status", "GET", "/jobs/orders/changes/status", "", rebound},
		{"a DNS-rebinding page acknowledges the batch", "POST", "/jobs/orders/changes/ack", `{"consumer":"mail","batch":"` + b.ID + `"}`, rebound},
		{"a DNS-rebinding page claims a key", "POST", "/keys/claim", `{"key":"inv-1","ttl":"1000h"}`, rebound},
		{"another site's page acknowledges the batch", "POST", "/jobs/orders/changes/ack", `{"consumer":"mail","batch":"` + b.ID + `"}`, crossSite},
		{"another site's page claims a key", "POST", "/keys/claim", `{"key":"inv-1","ttl":"1000h"}`, crossSite},
		{"another site's page starts a run", "POST", "/jobs/orders/run", "", crossSite},
	} {
		if code, body := s.doWith(t, c.method, c.path, c.body, c.hdr); code != 403 || !strings.Contains(body, `"exit_code":2`) {
			t.Errorf("%s: %d %s; want 403, nothing done", c.what, code, body)
		}
	}
	if code, body := s.doWith(t, "GET", "/keys/get?key=inv-1", "", nil); code != 200 || !strings.Contains(body, `"status":"not_found"`) {
		t.Errorf("the key after the refused claims: %d %s; want not_found", code, body)
	}
	code, body = s.doWith(t, "POST", "/jobs/orders/changes/ack", `{"consumer":"mail","batch":"`+b.ID+`"}`, map[string]string{"Host": "[::1]:" + port})
	if code != 200 || !strings.Contains(body, `"acked":`+strconv.FormatInt(b.Through, 10)) {
		t.Errorf("the consumer's own ack after the refused ones (Host [::1]): %d %s; want its batch still its own", code, body)
	}
}

// With a token, what a hostile client tries changes nothing: the token
// in the query string (where logs and Referer headers keep it) is no
// token; a job named by a path (.., an absolute path, URL-encoded, a
// symlink out of the folder) runs nothing; a body over 1 MiB is 413.
func TestServeHostileRequests(t *testing.T) {
	_, api := startAPI(t, fakeapi.Options{Records: 20})
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJob(t, jobs, "orders.yaml", styleJob("page", api, "sqlite:out.db"))
	outsideDB := filepath.Join(dir, "outside.db")
	outside := writeJob(t, dir, "outside.yaml", styleJob("page", api, "sqlite:"+outsideDB))
	if err := os.Symlink(outside, filepath.Join(jobs, "escape.yaml")); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, dir, jobs, nil)
	for _, q := range []string{"access_token", "token", "auth", "bearer"} {
		if code, body := s.doWith(t, "GET", "/jobs?"+q+"="+url.QueryEscape(serveToken), "", nil); code != 401 {
			t.Errorf("the token as ?%s=: %d %s; want 401", q, code, body)
		}
	}
	for _, p := range []string{
		"/jobs/escape/run", "/jobs/escape.yaml/run",
		"/jobs/..%2foutside/run", "/jobs/%2e%2e%2foutside/run", "/jobs/%2e%2e/run",
		"/jobs/" + url.PathEscape(outside) + "/run", "/jobs/%2F" + url.PathEscape(strings.TrimPrefix(outside, "/")) + "/run",
		"/jobs/.%2e/outside/run", "/jobs/orders%00/run", "/jobs/.orders/run",
	} {
		code, body := s.do(t, "POST", p, "")
		if code != 403 && code != 404 {
			t.Errorf("POST %s: %d %s; want 403 or 404", p, code, body)
		}
	}
	if _, err := os.Stat(outsideDB); !os.IsNotExist(err) {
		t.Errorf("a job outside the folder ran: %s exists (%v)", outsideDB, err)
	}
	big := `{"key":"` + strings.Repeat("k", 2<<20) + `"}`
	if code, body := s.do(t, "POST", "/keys/claim", big); code != 413 {
		t.Errorf("a 2 MiB body: %d %.200s; want 413", code, body)
	}
	if code, body := s.do(t, "POST", "/jobs/orders/run", `{"time_limit":"1m","max_pages":0,`+strings.Repeat(" ", 2<<20)+`}`); code != 413 {
		t.Errorf("a 2 MiB run body: %d %.200s; want 413", code, body)
	}
}

// Eight run requests for one job at once, by both its names, start one
// run: one request is the run's, the others 409 locked. Then serve is
// SIGKILLed mid-run (no shutdown, no checkpoint saved at the kill), and a
// second serve on the same state runs the job to completion: the table
// equals the source, each row once. SQLite and PostgreSQL state.
func TestServeKilledMidRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGKILL on Windows")
	}
	for _, state := range []string{"sqlite", "postgres"} {
		t.Run(state, func(t *testing.T) {
			var env []string
			if state == "postgres" {
				pg := postgresURL(t)
				env = []string{"IDEMSYNC_STATE=" + pgStateURL(t, pg, freshSchema(t, pg), "2s")}
			}
			api, apiURL := startAPI(t, fakeapi.Options{Records: 3000, Latency: 20 * time.Millisecond})
			dir := t.TempDir()
			jobs := filepath.Join(dir, "jobs")
			if err := os.Mkdir(jobs, 0o755); err != nil {
				t.Fatal(err)
			}
			writeJob(t, jobs, "orders.yaml", styleJob("page", apiURL, "sqlite:out.db"))
			s := startServe(t, dir, jobs, env)
			// Not runAsync: the request the kill cuts is no error of the test.
			res := make(chan serveRun, 8)
			for i := range 8 {
				go func() {
					req, _ := http.NewRequest("POST", s.url+"/jobs/"+[]string{"orders", "orders.yaml"}[i%2]+"/run", nil)
					req.Header.Set("Authorization", "Bearer "+serveToken)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						res <- serveRun{}
						return
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					res <- serveRun{resp.StatusCode, string(b)}
				}()
			}
			// Seven requests answer while the eighth's run goes on: each is
			// told the job is locked. Only then is the server killed, so
			// that a request still on its way is not taken for the run's.
			deadline := time.Now().Add(30 * time.Second)
			for range 7 {
				select {
				case r := <-res:
					if r.code != 409 || !strings.Contains(r.body, `"status":"locked"`) {
						t.Fatalf("a run request while one runs: %d %s, want 409 locked", r.code, r.body)
					}
				case <-time.After(time.Until(deadline)):
					t.Fatal("seven of 8 run requests at once were not all answered locked")
				}
			}
			for st := s.jobStatus(t, "orders"); st.Status != "running" || st.LastRun == nil || st.LastRun.Pages < 3; st = s.jobStatus(t, "orders") {
				if time.Now().After(deadline) {
					t.Fatalf("the run never showed running with pages: %+v", st)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := s.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-s.done
			select {
			case r := <-res:
				if r.code != 0 {
					t.Errorf("the run's request after the kill: %d %s, want it cut", r.code, r.body)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the run's request never ended after the kill")
			}
			api.SetLatency(0)
			s = startServe(t, dir, jobs, env)
			deadline = time.Now().Add(60 * time.Second)
			for {
				code, body := s.do(t, "POST", "/jobs/orders/run", "")
				if code == 200 && strings.Contains(body, `"status":"completed"`) {
					break
				}
				// The killed run's lock is the dead process's: on PostgreSQL
				// its lease runs out first (409, locked, meanwhile).
				if code != 409 || time.Now().After(deadline) {
					t.Fatalf("the run after the kill: %d %s", code, body)
				}
				time.Sleep(200 * time.Millisecond)
			}
			assertEqualSource(t, readSQLite(t, filepath.Join(jobs, "out.db")), sourceRows(api))
		})
	}
}

// Without a token the server must end up on a loopback address, not only
// be asked for one: "localhost" is a name, and a hosts file or a resolver
// (a search domain answering localhost.corp.example) can map it to an
// address other machines reach. Run under a hosts file mapping localhost
// to this machine's own non-loopback address, `serve --listen localhost:P`
// without $IDEMSYNC_SERVE_TOKEN exits 2 naming the address it got,
// instead of serving the network without a token (docs/serve.md,
// "Security"). Needs unshare(1) and a user namespace to bind-mount the
// hosts file; skips without them.
func TestServeLocalhostResolvingElsewhere(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("user and mount namespaces are Linux's")
	}
	var ip net.IP
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			ip = n.IP
			break
		}
	}
	if ip == nil {
		t.Skip("no non-loopback IPv4 address on this machine")
	}
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte(ip.String()+" localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unshare := []string{"unshare", "--user", "--map-root-user", "--mount", "sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, hosts}
	if out, err := exec.Command(unshare[0], append(unshare[1:], "true")...).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount a hosts file in a user namespace: %v: %s", err, out)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	c := exec.Command(unshare[0], append(unshare[1:], binary, "serve", "--jobs", dir, "--listen", "localhost:"+port)...)
	c.Env = cleanEnv()
	var errOut strings.Builder
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(errOut.String(), ip.String()) {
			t.Errorf("serve --listen localhost:%s with localhost at %s: %v, want exit 2 naming %s: %s", port, ip, err, ip, errOut.String())
		}
	case <-time.After(10 * time.Second):
		// Another machine reaches it, and may send any Host it likes.
		req, _ := http.NewRequest("GET", "http://"+net.JoinHostPort(ip.String(), port)+"/jobs", nil)
		req.Host = "localhost:" + port
		code := 0
		if resp, err := http.DefaultClient.Do(req); err == nil {
			code = resp.StatusCode
			resp.Body.Close()
		}
		_ = c.Process.Kill()
		<-done
		t.Errorf("serve --listen localhost:%s without a token is serving on %s (GET /jobs from there: %d): %s", port, ip, code, errOut.String())
	}
}

// What a request says and the server would not act on is refused (400,
// naming it), never dropped: a query parameter an endpoint does not take
// (POST /jobs/NAME/run?full=true, as an HTTP node's "query parameters"
// send it, would otherwise run without --full), a parameter given twice
// (/keys/get?key=a&key=b), and a body field given twice ({"key":"a",
// "key":"b"} would claim b). Nothing runs and nothing is claimed
// (docs/serve.md, "Endpoints").
func TestServeRefusesWhatItWouldIgnore(t *testing.T) {
	_, api := startAPI(t, fakeapi.Options{Records: 20})
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJob(t, jobs, "orders.yaml", styleJob("page", api, "sqlite:out.db"))
	s := startServe(t, dir, jobs, nil)
	for _, c := range []struct{ method, path, body, names string }{
		{"POST", "/jobs/orders/run?full=true", "", `\"full\"`},
		{"POST", "/jobs/orders/run?restart=1&max_pages=2", "", `\"max_pages\"`},
		{"POST", "/jobs/orders/run", `{"full":false,"full":true}`, `\"full\"`},
		{"GET", "/jobs/orders/status?runs=1&runs=1000", "", `\"runs\"`},
		{"GET", "/jobs/orders/status?run=5", "", `\"run\"`},
		{"GET", "/keys/get?key=a&key=b", "", `\"key\"`},
		{"POST", "/keys/claim?key=b", `{"key":"a"}`, `\"key\"`},
		{"POST", "/keys/claim", `{"key":"a","ttl":"1m","key":"b"}`, `\"key\"`},
		{"POST", "/keys/claim", `{"key":"a","params":{"to":"x","to":"y"}}`, `\"to\"`},
	} {
		code, body := s.do(t, c.method, c.path, c.body)
		if code != 400 || !strings.Contains(body, `"exit_code":2`) || !strings.Contains(body, c.names) {
			t.Errorf("%s %s %s: %d %s; want 400 naming %s in its error", c.method, c.path, c.body, code, body, c.names)
		}
	}
	if st := s.jobStatus(t, "orders"); st.LastRun != nil {
		t.Errorf("a refused run request ran: last run %+v", st.LastRun)
	}
	for _, k := range []string{"a", "b"} {
		if code, body := s.do(t, "GET", "/keys/get?key="+k, ""); code != 200 || !strings.Contains(body, `"status":"not_found"`) {
			t.Errorf("key %s after the refused claims: %d %s; want not_found", k, code, body)
		}
	}
	if code, body := s.do(t, "POST", "/jobs/orders/run", `{"full":true}`); code != 200 || !strings.Contains(body, `"status":"completed"`) {
		t.Errorf("the run asked for properly: %d %s", code, body)
	}
}
