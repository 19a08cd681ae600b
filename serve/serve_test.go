package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
)

const testToken = "0123456789abcdef0123456789abcdef"

// recorder is a Backend that records what it was asked and answers a
// fixed reply: these tests are about the HTTP plumbing; e2e/serve_test.go
// runs the real commands behind it.
type recorder struct {
	mu    gosync.Mutex
	files []string
	keys  []string      // "action key" of each ledger call
	block chan struct{} // when set, Run waits for it
}

func (b *recorder) Run(ctx context.Context, file string, o RunOptions, started func()) Reply {
	started()
	b.mu.Lock()
	b.files = append(b.files, file)
	block := b.block
	b.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return Reply{Body: []byte(`{"job":"j","status":"interrupted","exit_code":130}`), Code: 130}
		}
	}
	return Reply{Body: []byte(`{"job":"j","status":"completed","exit_code":0}`), Code: 0}
}

func (b *recorder) Status(ctx context.Context, file string, runs int) Reply {
	return Reply{Body: []byte(`{"jobs":[{"name":"j","status":"running"}]}`), Code: 0}
}

func (b *recorder) Key(ctx context.Context, action string, k KeyRequest) Reply {
	b.mu.Lock()
	b.keys = append(b.keys, action+" "+k.Key)
	b.mu.Unlock()
	return Reply{Body: []byte(`{"status":"acquired","ns":"default","key":"k","token":"t"}`), Code: 0}
}

func (b *recorder) Changes(ctx context.Context, file, action string, c ChangesRequest) Reply {
	b.mu.Lock()
	b.keys = append(b.keys, "changes "+action+" "+c.Consumer)
	b.mu.Unlock()
	switch action {
	case "next":
		return Reply{Body: []byte(`{"job":"a","consumer":"c","batch":"b1","after":0,"through":2,"events":[]}`), Code: 0}
	case "ack":
		return Reply{Body: []byte(`{"job":"a","consumer":"c","batch":"b1","acked":2}`), Code: 0}
	}
	return Reply{Body: []byte(`{"job":"a","events":0,"consumers":[]}`), Code: 0}
}

func (b *recorder) Metrics(ctx context.Context, files []string, running map[string]bool) ([]byte, error) {
	return []byte("# HELP x y\n"), nil
}

func (b *recorder) ran() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.files...)
}

// newTestServer serves a jobs folder holding a.yaml over httptest.
func newTestServer(t *testing.T, token string, b Backend) (*Server, string, string) {
	t.Helper()
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(jobs, "a.yaml"), "name: a\n")
	s, err := New(Config{Listen: "127.0.0.1:0", Jobs: jobs, Token: token, Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL, jobs
}

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// call sends one request and returns the status and the decoded body.
func call(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if ct := resp.Header.Get("Content-Type"); ct == "application/json" {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: body is not JSON: %v: %s", method, url, err, raw)
		}
	}
	return resp.StatusCode, out
}

func TestCheckListen(t *testing.T) {
	for _, c := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8787", "", true},
		{"[::1]:8787", "", true},
		{"localhost:8787", "", true},
		{":8787", "", false},
		{"0.0.0.0:8787", "", false},
		{"10.1.2.3:8787", "", false},
		{"0.0.0.0:8787", testToken, true},
		{"127.0.0.1:8787", "short", false},
		{"127.0.0.1", "", false},
	} {
		err := CheckListen(c.addr, c.token)
		if (err == nil) != c.ok {
			t.Errorf("CheckListen(%q, %q) = %v, want ok %v", c.addr, c.token, err, c.ok)
		}
	}
}

func TestTokenRequired(t *testing.T) {
	_, url, _ := newTestServer(t, testToken, &recorder{})
	for _, tok := range []string{"", "wrong-token-wrong-token-wrong-tok", testToken + "x", testToken[:len(testToken)-1]} {
		code, body := call(t, "GET", url+"/jobs/a/status", tok, "")
		if code != http.StatusUnauthorized || body["exit_code"] != float64(2) || body["status"] != "failed" {
			t.Errorf("token %q: %d %v, want 401 with exit_code 2", tok, code, body)
		}
	}
	if code, body := call(t, "GET", url+"/jobs/a/status", testToken, ""); code != 200 || body["jobs"] == nil {
		t.Errorf("right token: %d %v", code, body)
	}
	// The health check is public: a probe carries no token.
	if code, _ := call(t, "GET", url+"/healthz", "", ""); code != 200 {
		t.Errorf("healthz without token: %d", code)
	}
}

func TestJobNamesStayInTheFolder(t *testing.T) {
	b := &recorder{}
	_, url, jobs := newTestServer(t, "", b)
	outside := filepath.Join(filepath.Dir(jobs), "secret.yaml")
	writeFile(t, outside, "name: secret\n")
	if err := os.Symlink(outside, filepath.Join(jobs, "escape.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(jobs), filepath.Join(jobs, "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(jobs, "a.yaml"), filepath.Join(jobs, "alias.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"/jobs/..%2Fsecret/run", 404},
		{"/jobs/..%2Fsecret.yaml/run", 404},
		{"/jobs/%2E%2E/run", 404},
		{"/jobs/" + strings.ReplaceAll(url2path(outside), "/", "%2F") + "/run", 404},
		{"/jobs/up%2Fsecret/run", 404},
		{"/jobs/.hidden/run", 404},
		{"/jobs/escape/run", 403},
		{"/jobs/escape.yaml/run", 403},
		{"/jobs/missing/run", 404},
	} {
		code, body := call(t, "POST", url+c.path, "", "")
		if code != c.want || body["exit_code"] != float64(2) {
			t.Errorf("POST %s: %d %v, want %d with exit_code 2", c.path, code, body, c.want)
		}
	}
	if got := b.ran(); len(got) != 0 {
		t.Fatalf("ran %v outside the folder's jobs", got)
	}
	for _, name := range []string{"a", "a.yaml", "alias"} {
		if code, body := call(t, "POST", url+"/jobs/"+name+"/run", "", ""); code != 200 {
			t.Errorf("POST /jobs/%s/run: %d %v", name, code, body)
		}
	}
	real, _ := filepath.EvalSymlinks(filepath.Join(jobs, "a.yaml"))
	for _, f := range b.ran() {
		if f != real {
			t.Errorf("ran %s, want %s", f, real)
		}
	}
	code, body := call(t, "GET", url+"/jobs", "", "")
	if code != 200 || len(body["jobs"].([]any)) != 2 { // a and alias; escape left out
		t.Errorf("GET /jobs: %d %v", code, body)
	}
}

// url2path is p without its leading slash, as a name would carry it.
func url2path(p string) string { return strings.TrimPrefix(filepath.ToSlash(p), "/") }

func TestRequestLimits(t *testing.T) {
	_, url, _ := newTestServer(t, "", &recorder{})
	big := `{"resources":["` + strings.Repeat("x", maxBodyBytes) + `"]}`
	if code, body := call(t, "POST", url+"/jobs/a/run", "", big); code != http.StatusRequestEntityTooLarge || body["exit_code"] != float64(2) {
		t.Errorf("big body: %d %v", code, body)
	}
	for _, b := range []string{`{"nope":1}`, `{"max_pages":-1}`, `{"time_limit":"soon"}`, `[1]`, `{} {}`} {
		if code, body := call(t, "POST", url+"/jobs/a/run", "", b); code != 400 || body["exit_code"] != float64(2) {
			t.Errorf("body %s: %d %v", b, code, body)
		}
	}
	if code, body := call(t, "DELETE", url+"/jobs/a/run", "", ""); code != 405 || body["exit_code"] != float64(2) {
		t.Errorf("DELETE: %d %v", code, body)
	}
	if code, body := call(t, "GET", url+"/nope", "", ""); code != 404 || body["exit_code"] != float64(2) {
		t.Errorf("unknown path: %d %v", code, body)
	}
}

func TestStatusTable(t *testing.T) {
	for code, want := range map[int]int{0: 200, 1: 500, 2: 400, 3: 503, 4: 409, 5: 409, 130: 503, 42: 500} {
		if got := statusOf(code); got != want {
			t.Errorf("exit %d: HTTP %d, want %d", code, got, want)
		}
	}
}

// A ConfigMap mounted in Kubernetes is a folder of symlinks into a hidden
// timestamped folder beside them (orders.yaml → ..data/orders.yaml,
// ..data → ..2026_11_26_10_00_00.1); its jobs resolve inside the folder
// and are served, the hidden entries are not jobs.
func TestConfigMapFolder(t *testing.T) {
	jobs := t.TempDir()
	ts := filepath.Join(jobs, "..2026_11_26_10_00_00.1")
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ts, "orders.yaml"), "name: orders\n")
	if err := os.Symlink("..2026_11_26_10_00_00.1", filepath.Join(jobs, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/orders.yaml", filepath.Join(jobs, "orders.yaml")); err != nil {
		t.Fatal(err)
	}
	b := &recorder{}
	s, err := New(Config{Listen: "127.0.0.1:0", Jobs: jobs, Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	if code, body := call(t, "POST", srv.URL+"/jobs/orders/run", "", ""); code != 200 {
		t.Errorf("run: %d %v", code, body)
	}
	if code, body := call(t, "GET", srv.URL+"/jobs", "", ""); code != 200 || len(body["jobs"].([]any)) != 1 {
		t.Errorf("jobs: %d %v, want [orders]", code, body)
	}
	if code, _ := call(t, "POST", srv.URL+"/jobs/..data%2Forders/run", "", ""); code != 404 {
		t.Errorf("..data/orders: %d, want 404", code)
	}
}

// A ledger call takes its own fields only, a bounded wait and durations
// that parse; get takes ns and key.
func TestKeyRequests(t *testing.T) {
	b := &recorder{}
	_, url, _ := newTestServer(t, "", b)
	for _, c := range []struct {
		path, body string
		want       int
	}{
		{"/keys/claim", `{"key":"k","params":{"a":1},"owner":"o","ttl":"1m","wait":"1s"}`, 200},
		{"/keys/complete", `{"key":"k","token":"t","result":{"id":7}}`, 200},
		{"/keys/fail", `{"key":"k","token":"t","retryable":true,"not_before":"1m","error":"x"}`, 200},
		{"/keys/heartbeat", `{"key":"k","token":"t"}`, 200},
		{"/keys/complete", `{"key":"k","token":"t","params":{}}`, 400},
		{"/keys/heartbeat", `{"key":"k","token":"t","result":1}`, 400},
		{"/keys/claim", `{"key":"k","wait":"6m"}`, 400},
		{"/keys/claim", `{"key":"k","wait":"soon"}`, 400},
		{"/keys/fail", `{"key":"k","token":"t","retryable":true,"not_before":"-1m"}`, 400},
		{"/keys/claim", `{"key":"k"`, 400},
		// Strings that would read as U+FFFD, so as another key's: "M\xfcller"
		// and "M\xe4ller" (Latin-1), lone surrogates (docs/serve.md).
		{"/keys/claim", "{\"key\":\"M\xfcller\"}", 400},
		{"/keys/claim", `{"key":"x\ud800"}`, 400},
		{"/keys/claim", `{"key":"x","owner":"\udfff"}`, 400},
		{"/keys/complete", `{"key":"x\udbff","token":"t"}`, 400},
		{"/keys/complete", "{\"key\":\"k\",\"token\":\"t\",\"result\":\"\xff\"}", 400},
		{"/keys/claim", `{"key":"\ud83d\ude00\\ud800","owner":"\ufffd"}`, 200}, // a pair; an escaped backslash
		{"/keys/claim", `{"key":"k","ns":""}`, 400},                            // empty, not the default namespace
		{"/keys/heartbeat", `{"key":"k","ns":"","token":"t"}`, 400},
		{"/keys/claim", `{"key":"k","on_expired":""}`, 400}, // empty, not retry
		{"/keys/claim", `{"key":"k","ttl":""}`, 400},        // empty, not 10m
	} {
		if code, body := call(t, "POST", url+c.path, "", c.body); code != c.want {
			t.Errorf("POST %s %s: %d %v, want %d", c.path, c.body, code, body, c.want)
		}
	}
	if code, body := call(t, "GET", url+"/keys/get?key=k&ns=n", "", ""); code != 200 {
		t.Errorf("get: %d %v", code, body)
	}
	if code, body := call(t, "GET", url+"/keys/get?key=k&token=t", "", ""); code != 400 {
		t.Errorf("get with a token: %d %v, want 400", code, body)
	}
	want := []string{"claim k", "complete k", "fail k", "heartbeat k", `claim 😀\ud800`, "get k"}
	if got := b.keyCalls(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ledger calls %v, want %v", got, want)
	}
}

func (b *recorder) keyCalls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.keys...)
}

// A feed call takes its own fields only and a lease that parses; the job
// name resolves as for a run.
func TestChangesRequests(t *testing.T) {
	b := &recorder{}
	_, url, _ := newTestServer(t, "", b)
	for _, c := range []struct {
		path, body string
		want       int
	}{
		{"/jobs/a/changes", `{"consumer":"mail","resources":["r"],"ops":["I","U"],"limit":5,"lease":"30s"}`, 200},
		{"/jobs/a/changes/ack", `{"consumer":"mail","batch":"b1","through":3}`, 200},
		{"/jobs/a/changes", `{"consumer":"mail","through":3}`, 400},
		{"/jobs/a/changes/ack", `{"consumer":"mail","batch":"b1","lease":"1m"}`, 400},
		{"/jobs/a/changes", `{"consumer":"mail","lease":"soon"}`, 400},
		{"/jobs/..%2Fa/changes", `{"consumer":"mail"}`, 404},
	} {
		if code, body := call(t, "POST", url+c.path, "", c.body); code != c.want {
			t.Errorf("POST %s %s: %d %v, want %d", c.path, c.body, code, body, c.want)
		}
	}
	if code, body := call(t, "GET", url+"/jobs/a/changes/status", "", ""); code != 200 {
		t.Errorf("status: %d %v", code, body)
	}
	want := []string{"changes next mail", "changes ack mail", "changes status "}
	if got := b.keyCalls(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("feed calls %v, want %v", got, want)
	}
}

// The change feed's refusals that the consumer resolves itself (a stale
// ack, a gap) answer 409; any other exit 1 stays a permanent failure's 500.
func TestReplyStatusOfFeedRefusals(t *testing.T) {
	for _, c := range []struct {
		body string
		code int
		want int
	}{
		{`{"status":"stale","exit_code":1}`, 1, 409},
		{`{"status":"gap","exit_code":1}`, 1, 409},
		{`{"status":"failed","exit_code":1}`, 1, 500},
		{`{"status":"gap","exit_code":0}`, 0, 200},
		{`not json`, 1, 500},
		{`{"status":"locked","exit_code":4}`, 4, 409},
	} {
		if got := replyStatus(Reply{Body: []byte(c.body), Code: c.code}); got != c.want {
			t.Errorf("%s (exit %d): %d, want %d", c.body, c.code, got, c.want)
		}
	}
}

// A token read from a file (a Kubernetes or Docker secret) usually ends
// with a newline: the server's token is taken without the blanks around
// it, as a client's is, and the scheme's name is matched whatever its case
// (HTTP's auth schemes are case-insensitive). A token of blanks only is no
// token: loopback only.
func TestTokenFromAFileAndSchemeCase(t *testing.T) {
	_, url, _ := newTestServer(t, testToken+"\n", &recorder{})
	for _, h := range []string{"Bearer " + testToken, "bearer " + testToken, "BEARER  " + testToken + " "} {
		req, _ := http.NewRequest("GET", url+"/jobs/a/status", nil)
		req.Header.Set("Authorization", h)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("Authorization %q against a token ending in a newline: %d, want 200", h, resp.StatusCode)
		}
	}
	for _, h := range []string{"Basic " + testToken, "Bearer" + testToken, testToken} {
		req, _ := http.NewRequest("GET", url+"/jobs/a/status", nil)
		req.Header.Set("Authorization", h)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d, want 401", h, resp.StatusCode)
		}
	}
	if err := CheckListen("0.0.0.0:8787", " \n\t"); err == nil {
		t.Errorf("a token of blanks only was taken for a token on a non-loopback address")
	}
	if err := CheckListen("127.0.0.1:8787", "short\n\n\n\n\n\n\n\n\n\n\n\n"); err == nil {
		t.Errorf("a short token padded with newlines was taken")
	}
}
