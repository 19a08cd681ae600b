package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// canaryScan counts occurrences of canary secrets in everything idemsync
// printed or stored.
type canaryScan struct {
	canaries []string
	// parts, when > 0, also counts any part of a canary of that many bytes
	// or more (a secret cut at an excerpt's limit, or one of its words when
	// its whitespace was collapsed) as a leak.
	parts   int
	outputs int
	files   int
	bytes   int64
	hits    []string
}

// text scans one output.
func (c *canaryScan) text(t *testing.T, where, s string) {
	t.Helper()
	c.outputs++
	c.bytes += int64(len(s))
	for _, k := range c.canaries {
		if n := strings.Count(s, k); n > 0 {
			c.hits = append(c.hits, fmt.Sprintf("%s: %d× %s", where, n, k))
			i := strings.Index(s, k)
			t.Errorf("canary %s appears %d time(s) in %s, first in: …%s…", k, n, where, s[max(0, i-150):min(len(s), i+len(k)+50)])
		} else if p := c.part(s, k); p != "" {
			c.hits = append(c.hits, fmt.Sprintf("%s: part %q of %s", where, p, k))
			i := strings.Index(s, p)
			t.Errorf("part %q of canary %q appears in %s: …%s…", p, k, where, s[max(0, i-150):min(len(s), i+len(p)+50)])
		}
	}
}

// part returns the longest part of canary k, of c.parts bytes or more and
// without whitespace at its ends, that s holds ("" for none).
func (c *canaryScan) part(s, k string) string {
	if c.parts <= 0 {
		return ""
	}
	for n := len(k) - 1; n >= c.parts; n-- {
		for i := 0; i+n <= len(k); i++ {
			if p := k[i : i+n]; strings.TrimSpace(p) == p && strings.Contains(s, p) {
				return p
			}
		}
	}
	return ""
}

// result scans a command's stdout and stderr.
func (c *canaryScan) result(t *testing.T, what string, r result) {
	t.Helper()
	c.text(t, what+" stdout", r.stdout)
	c.text(t, what+" stderr", r.stderr)
}

// stateFiles scans the bytes of the state file and its -wal and -shm.
func (c *canaryScan) stateFiles(t *testing.T, state string) {
	t.Helper()
	for _, p := range []string{state, state + "-wal", state + "-shm"} {
		data, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		c.files++
		c.bytes += int64(len(data))
		for _, k := range c.canaries {
			if n := strings.Count(string(data), k); n > 0 {
				c.hits = append(c.hits, fmt.Sprintf("%s: %d× %s", filepath.Base(p), n, k))
				t.Errorf("canary %s appears %d time(s) in %s", k, n, p)
			} else if part := c.part(string(data), k); part != "" {
				c.hits = append(c.hits, fmt.Sprintf("%s: part %q of %s", filepath.Base(p), part, k))
				t.Errorf("part %q of canary %q appears in %s", part, k, p)
			}
		}
	}
}

// canary returns a distinct secret that cannot occur by chance.
func canary(t *testing.T, where string) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "Kanari" + where + hex.EncodeToString(b)
}

// closedPort returns a local TCP port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// echoServer answers every request with status and a body that repeats
// the request's URL and headers, secrets included, as careless APIs do.
func echoServer(t *testing.T, status int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":"rejected %s with key %s and %s"}`, r.URL.RequestURI(), r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The whole CLI runs with canary secrets in a header (${VAR}), a bearer
// token (${VAR}), a source query parameter (${VAR}), a literal URL password
// and a database password (${VAR}): runs that succeed, fail permanently
// (an API that echoes the secrets back in a 401, an unreachable database),
// fail transiently (a 503 echoing them, with debug logs), replays, every
// status form, validate and validate --connect, text and JSON logs at
// debug level. No canary may appear on stdout, stderr or in the state
// file's bytes (with its -wal and -shm).
func TestSecretsCanary(t *testing.T) {
	key, token, query := canary(t, "Key"), canary(t, "Token"), canary(t, "Query")
	password, dbPassword := canary(t, "Password"), canary(t, "DB")
	scan := &canaryScan{canaries: []string{key, token, query, password, dbPassword,
		base64.StdEncoding.EncodeToString([]byte("user:" + password)), // the Basic credentials
		base64.StdEncoding.EncodeToString([]byte(token)),
	}}
	env := []string{"CANARY_KEY=" + key, "CANARY_TOKEN=" + token, "CANARY_QUERY=" + query, "CANARY_DB=" + dbPassword}
	secretSource := `  headers: {X-Api-Key: "${CANARY_KEY}", Authorization: "Bearer ${CANARY_TOKEN}"}
  query: {api_key: "${CANARY_QUERY}"}
`
	api, apiURL := startAPI(t, fakeapi.Options{Records: 120, Token: token})
	open, openURL := startAPI(t, fakeapi.Options{Records: 120}) // takes Basic credentials from the URL

	jobs := []canaryJob{
		{"headers and query, cursor style", ftWithSource(secretSource)(styleJob("cursor", apiURL, "sqlite:out.db")), 0,
			[][]string{{"replay", "--from", "aWQ6NDA", "--json"}}}, // the cursor after id 40
		{"URL password", strings.Replace(styleJob("page", openURL, "sqlite:out.db"), "  url: http://", "  url: http://user:"+password+"@", 1), 0,
			[][]string{{"replay", "--from", "2", "--to", "3"}}},
		{"401 echoing the secrets", ftWithSource(secretSource)(styleJob("page", echoServer(t, 401), "sqlite:out.db")), 1, nil},
		{"503 echoing the secrets", ftWithSource(secretSource)(styleJob("page", echoServer(t, 503), "sqlite:out.db")), 3, nil},
		// An unreachable database is transient for the sinks (exit 3).
		{"unreachable database", ftWithSource(secretSource)(styleJob("page", apiURL,
			fmt.Sprintf("postgres://idemsync:${CANARY_DB}@127.0.0.1:%d/idemsync?sslmode=disable&connect_timeout=2", closedPort(t)))), 3, nil},
	}
	for _, j := range jobs {
		state := runCanaryJob(t, scan, env, j)
		if fi, err := os.Stat(state); err == nil && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: state file mode %v, want 0600", j.name, fi.Mode().Perm())
		}
	}
	if !api.SeenHeader("X-Api-Key") || !strings.Contains(api.LastHeaders().Get("Authorization"), token) {
		t.Errorf("the API never received the configured headers: the canaries were not exercised")
	}
	if want := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+password)); open.LastHeaders().Get("Authorization") != want {
		t.Errorf("the URL's credentials were not sent: the password canary was not exercised")
	}
	t.Logf("canary secrets: %d hits in %d outputs and %d state files (%d commands over %d jobs, %d KiB scanned)",
		len(scan.hits), scan.outputs, scan.files, scan.outputs/2, len(jobs), scan.bytes>>10)
	if len(scan.hits) != 0 {
		t.Errorf("canary hits: %v", scan.hits)
	}
}

// canaryJob is one job of the canary test and what its runs exit with.
type canaryJob struct {
	name, spec string
	runCode    int
	extra      [][]string // more commands (job file inserted second), each expected to exit 0
}

// runCanaryJob runs every command of the CLI on the job with env, scanning
// all output and then the state file, whose path it returns.
func runCanaryJob(t *testing.T, scan *canaryScan, env []string, j canaryJob) string {
	t.Helper()
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", j.spec)
	state := filepath.Join(dir, ".idemsync", "state.db")
	do := func(want int, args ...string) {
		t.Helper()
		r := idemsync(t, dir, env, args...)
		scan.result(t, fmt.Sprintf("%s: %v", j.name, args), r)
		if want >= 0 && r.code != want {
			t.Errorf("%s: %v: exit %d, want %d\n%s%s", j.name, args, r.code, want, r.stdout, r.stderr)
		}
	}
	do(0, "validate", job)
	do(0, "validate", job, "--json")
	do(j.runCode, "validate", job, "--connect", "--log-level", "debug")
	do(j.runCode, "run", job, "--log-level", "debug")
	do(j.runCode, "run", job, "--json", "--log-format", "json", "--log-level", "debug")
	do(j.runCode, "run", job, "--restart", "--log-format", "json", "--log-level", "debug", "--max-pages", "2")
	do(j.runCode, "run", job, "--log-level", "debug")
	for _, args := range j.extra {
		do(0, append([]string{args[0], job}, args[1:]...)...)
	}
	do(-1, "resume", job, "--log-level", "debug")
	do(0, "status", job)
	do(0, "status", job, "--json")
	do(0, "status", job, "--runs", "20", "--dead-letters")
	do(0, "status", job, "--json", "--runs", "20", "--log-level", "debug")
	do(0, "status", "--state", state)
	do(0, "status", "--json", "--state", state, "--log-format", "json")
	scan.stateFiles(t, state)
	return state
}

// A ${VAR} secret in source.query also reaches the next URLs an API
// returns (they keep the request's query), and those are the checkpoint of
// the cursor next_url and link styles: the state file, and status without
// a job file (which has no secrets to redact with), must not hold it.
func TestSecretsCanaryNextURL(t *testing.T) {
	token, query, password := canary(t, "Token"), canary(t, "Query"), canary(t, "Password")
	scan := &canaryScan{canaries: []string{token, query, password}}
	env := []string{"CANARY_KEY=key-" + token, "CANARY_TOKEN=" + token, "CANARY_QUERY=" + query}
	api, apiURL := startAPI(t, fakeapi.Options{Records: 120, Token: token})
	source := `  headers: {X-Api-Key: "${CANARY_KEY}", Authorization: "Bearer ${CANARY_TOKEN}"}
  query: {api_key: "${CANARY_QUERY}"}
`
	runCanaryJob(t, scan, env, canaryJob{"next URLs", ftWithSource(source)(styleJob("cursor-url", apiURL, "sqlite:out.db")), 0, nil})
	if got := api.LastHeaders(); got.Get("Authorization") != "Bearer "+token {
		t.Errorf("the API did not receive the token: %v", got)
	}
	// Relative Link headers resolve against the request URL, credentials
	// included.
	open, openURL := startAPI(t, fakeapi.Options{Records: 120})
	link := strings.NewReplacer("  url: http://", "  url: http://user:"+password+"@", "/page\n", "/link?relative=1\n",
		"style: page", "style: link", "  records: data\n", "").Replace(styleJob("page", openURL, "sqlite:out.db"))
	runCanaryJob(t, scan, env, canaryJob{"relative links", link, 0, nil})
	if open.Requests("/link") < 15 { // five pages a run, three runs at least
		t.Errorf("%d requests: the link job did not page through", open.Requests("/link"))
	}
	t.Logf("canary secrets (next URLs): %d hits in %d outputs and %d state files", len(scan.hits), scan.outputs, scan.files)
}

// A redirect to another origin (the same host on another port) that
// source.follow_origins lists does not carry the job's X-Api-Key or
// Authorization: the second server never sees
// them, while the first one did. A same-origin redirect keeps them.
func TestRedirectDropsConfiguredHeaders(t *testing.T) {
	token := canary(t, "Token")
	other, otherURL := startAPI(t, fakeapi.Options{Records: 40, Seed: 9})
	home, homeURL := startAPI(t, fakeapi.Options{Records: 40, Seed: 9, Token: token})
	spec := func(to string) string {
		return fmt.Sprintf(`name: redirected
source:
  url: %s/redirect?to=%s
  headers: {X-Api-Key: "${CANARY_KEY}", Authorization: "Bearer ${CANARY_TOKEN}"}
  follow_origins: [%s]
retry: {attempts: 2, min_wait: 10ms, max_wait: 20ms}
target:
  url: sqlite:out.db
  table: orders
  key: [id]
%s`, homeURL, to, otherURL, columnsYAML)
	}
	env := []string{"CANARY_KEY=key-" + token, "CANARY_TOKEN=" + token}

	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", spec(otherURL+"/all"))
	r := idemsync(t, dir, env, "run", job)
	if r.code != 0 {
		t.Fatalf("cross-origin redirect: exit %d: %s", r.code, r.stderr)
	}
	if other.Requests("/all") != 1 || home.Requests("/redirect") != 1 {
		t.Fatalf("requests: %d at /redirect, %d at the other origin", home.Requests("/redirect"), other.Requests("/all"))
	}
	for _, h := range []string{"X-Api-Key", "Authorization"} {
		if other.SeenHeader(h) {
			t.Errorf("the other origin received %s: %q", h, other.LastHeaders().Get(h))
		}
		if !home.SeenHeader(h) {
			t.Errorf("the job's own origin never received %s", h)
		}
	}
	if !strings.Contains(r.stderr, "configured headers not sent") {
		t.Errorf("no warning about the dropped headers:\n%s", r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(other))

	// Same origin: the token goes along (the API answers 401 without it).
	dir = t.TempDir()
	job = writeJob(t, dir, "job.yaml", spec(homeURL+"/all"))
	if r := idemsync(t, dir, env, "run", job); r.code != 0 {
		t.Fatalf("same-origin redirect: exit %d: %s", r.code, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(home))
}

// TLS is verified: a self-signed certificate fails (exit 1, naming the
// certificate) and writes nothing; source.insecure_skip_tls_verify: true
// syncs and warns on stderr.
func TestTLSVerification(t *testing.T) {
	api := fakeapi.New(fakeapi.Options{Records: 60})
	srv := httptest.NewUnstartedServer(api)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	spec := styleJob("page", srv.URL, "sqlite:out.db")
	job := writeJob(t, dir, "job.yaml", spec)
	r := idemsync(t, dir, nil, "run", job)
	if r.code != 1 || !strings.Contains(r.stderr, "certificate") {
		t.Fatalf("self-signed certificate: exit %d, want 1 naming the certificate:\n%s", r.code, r.stderr)
	}
	if api.TotalRequests() != 0 {
		t.Errorf("%d requests reached the handler through an unverified TLS connection", api.TotalRequests())
	}
	if r := idemsync(t, dir, nil, "validate", job, "--connect"); r.code != 1 || !strings.Contains(r.stderr, "certificate") {
		t.Errorf("validate --connect: exit %d: %s", r.code, r.stderr)
	}

	job = writeJob(t, dir, "job.yaml", ftWithSource("  insecure_skip_tls_verify: true\n")(spec))
	r = idemsync(t, dir, nil, "run", job, "--quiet")
	if r.code != 0 {
		t.Fatalf("with insecure_skip_tls_verify: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "TLS certificate verification is OFF") {
		t.Errorf("no warning on stderr (even with --quiet):\n%s", r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}
