// Package e2e drives the built idemsync binary as users do: real job files,
// a real HTTP API (internal/fakeapi on httptest), real SQLite and PostgreSQL
// targets, real subprocesses killed with SIGKILL.
package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	gosync "sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	// The binary under test is built from these packages: importing them
	// makes go test's cache notice when they change.
	_ "github.com/idemsync/idemsync/cmd"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

var binary string // path of the idemsync binary built by TestMain

func TestMain(m *testing.M) {
	flag.Parse()
	shortTierOnly()
	dir, err := os.MkdirTemp("", "idemsync-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "idemsync")
	if runtime.GOOS == "windows" {
		binary += ".exe"
	}
	// The failpoint tag arms IDEMSYNC_TEST_FAILPOINT, which the crash tests
	// kill the binary with; the product binary is built without it.
	build := exec.Command("go", "build", "-tags", "failpoint", "-o", binary, "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build idemsync: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	dropTestStates()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startAPI serves a fake API for the test's lifetime.
func startAPI(t *testing.T, opts fakeapi.Options) (*fakeapi.API, string) {
	t.Helper()
	api := fakeapi.New(opts)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return api, srv.URL
}

// result is a finished invocation of the binary.
type result struct {
	code   int
	stdout string
	stderr string
}

// idemsync runs the binary to completion in dir with extra environment.
func idemsync(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	return idemsyncStdin(t, dir, env, "", args...)
}

// idemsyncStdin is idemsync with stdin as the binary's standard input.
func idemsyncStdin(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, binary, args...)
	c.Dir = dir
	c.Env = append(testEnv(dir, args...), env...)
	c.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run idemsync %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// cleanEnv is the test process's environment without IDEMSYNC_ variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IDEMSYNC_") {
			env = append(env, kv)
		}
	}
	return env
}

// writeJob writes a job file into dir and returns its path.
func writeJob(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// columnsYAML maps every fakeapi field, with every column type.
const columnsYAML = `  columns:
    id: {path: id, type: integer}
    name: name
    email: {path: customer.email, type: text}
    total: {path: total, type: numeric}
    active: {path: active, type: boolean}
    updated_at: {path: updated_at, type: timestamp}
    tags: {path: tags, type: json}
`

// styleJob returns a job file for a pagination style against the fake API.
func styleJob(style, apiURL, target string) string {
	var src, pag string
	switch style {
	case "page":
		src, pag = apiURL+"/page", "  style: page\n  size_param: per_page\n  size: 25\n"
	case "page-total":
		src, pag = apiURL+"/page", "  style: page\n  size_param: per_page\n  size: 25\n  total_pages: meta.total_pages\n"
	case "cursor":
		src, pag = apiURL+"/cursor", "  style: cursor\n  next: next_cursor\n  size_param: limit\n  size: 25\n"
	case "cursor-url":
		src, pag = apiURL+"/cursor-url", "  style: cursor\n  next_url: links.next\n  size_param: limit\n  size: 25\n"
	case "hwm":
		src, pag = apiURL+"/hwm", "  style: hwm\n  field: updated_at\n  param: since\n  size_param: limit\n  size: 25\n"
	case "none":
		src, pag = apiURL+"/all", "  style: none\n"
	case "offset":
		src, pag = apiURL+"/offset", "  style: offset\n  size: 25\n"
	case "link":
		src, pag = apiURL+"/link", "  style: link\n  size_param: per_page\n  size: 25\n"
	case "link-relative":
		src, pag = apiURL+"/link?relative=1", "  style: link\n  size_param: per_page\n  size: 25\n"
	case "cursor-header":
		src, pag = apiURL+"/cursor-header", "  style: cursor\n  next_header: X-Next-Cursor\n  size_param: limit\n  size: 25\n"
	case "continue": // an append-only feed read by cursor
		src, pag = apiURL+"/cursor", "  style: cursor\n  next: next_cursor\n  size_param: limit\n  size: 25\n  continue: true\n"
	case "page-has-more":
		src, pag = apiURL+"/page", "  style: page\n  size_param: per_page\n  size: 25\n  has_more: meta.has_more\n"
	case "page-continue":
		src, pag = apiURL+"/page", "  style: page\n  size_param: per_page\n  size: 25\n  continue: true\n"
	default:
		panic("unknown style " + style)
	}
	records := "  records: data\n"
	switch style {
	case "none", "link", "link-relative", "cursor-header": // bare arrays
		records = ""
	}
	return fmt.Sprintf(`name: orders-%s
source:
  url: %s
%s  timeout: 5s
pagination:
%sretry:
  attempts: 6
  min_wait: 10ms
  max_wait: 200ms
target:
  url: %s
  table: orders
  key: [id]
%s`, strings.ReplaceAll(style, "-", "_"), src, records, pag, target, columnsYAML)
}

// row is one target row as read back, in comparable text form.
type row struct {
	name, email, total, updated, tags string
	active                            bool
}

// readSQLite reads the orders table of a SQLite target, failing on a
// duplicate key.
func readSQLite(t *testing.T, path string) map[int]row {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, name, email, total, active, updated_at, tags FROM orders`)
	if err != nil {
		t.Fatalf("read target: %v", err)
	}
	defer rows.Close()
	out := map[int]row{}
	for rows.Next() {
		var id int
		var r row
		var total, tags sql.NullString
		if err := rows.Scan(&id, &r.name, &r.email, &total, &r.active, &r.updated, &tags); err != nil {
			t.Fatal(err)
		}
		r.total, r.tags = total.String, tags.String
		// Stored with nine fractional digits; compared as an instant.
		ts, err := time.Parse(time.RFC3339Nano, r.updated)
		if err != nil {
			t.Fatalf("stored updated_at %q: %v", r.updated, err)
		}
		r.updated = ts.UTC().Format(time.RFC3339Nano)
		if _, dup := out[id]; dup {
			t.Fatalf("duplicate key %d in target", id)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sourceRows is the fake API's data set as the target should hold it.
func sourceRows(api *fakeapi.API) map[int]row {
	out := map[int]row{}
	for _, r := range api.Records() {
		tags, _ := json.Marshal(r.Tags)
		out[r.ID] = row{name: r.Name, email: r.Customer.Email, total: r.Total.String(), active: r.Active,
			updated: r.UpdatedAt.UTC().Format(time.RFC3339Nano), tags: string(tags)}
	}
	return out
}

// assertEqualSource fails unless the target equals the source exactly: no
// missing key, no extra key, no stale value.
func assertEqualSource(t *testing.T, got, want map[int]row) {
	t.Helper()
	missing, extra, stale := 0, 0, 0
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			missing++
			if missing <= 3 {
				t.Errorf("key %d missing from target", id)
			}
		case g != w:
			stale++
			if stale <= 3 {
				t.Errorf("key %d: target %+v, source %+v", id, g, w)
			}
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			extra++
			if extra <= 3 {
				t.Errorf("key %d in target but not in source", id)
			}
		}
	}
	if missing+extra+stale > 0 {
		t.Fatalf("target differs from source: %d missing, %d extra, %d stale (of %d)", missing, extra, stale, len(want))
	}
}

// runJSON is the --json object of run/resume/replay.
type runJSON struct {
	Job        string `json:"job"`
	RunID      int64  `json:"run_id"`
	Kind       string `json:"kind"`
	Status     string `json:"status"`
	Pages      int64  `json:"pages"`
	Records    int64  `json:"records"`
	Inserted   int64  `json:"inserted"`
	Updated    int64  `json:"updated"`
	Unchanged  int64  `json:"unchanged"`
	Skipped    int64  `json:"skipped"`
	Deleted    int64  `json:"deleted"`
	Checkpoint string `json:"checkpoint"`
	HWM        string `json:"hwm"`
	DurationMS *int64 `json:"duration_ms"`
	Error      string `json:"error"`
}

// parseRun parses the single JSON object printed on stdout.
func parseRun(t *testing.T, r result) runJSON {
	t.Helper()
	var out runJSON
	var raw map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\nstdout: %s\nstderr: %s", err, r.stdout, r.stderr)
	}
	for _, k := range []string{"job", "run_id", "kind", "status", "pages", "records", "inserted", "updated", "unchanged", "skipped", "checkpoint", "hwm", "duration_ms", "error"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("--json output lacks %q: %s", k, r.stdout)
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// runCode runs the binary with --json, fails the test unless it exits with
// code, and returns the parsed result object.
func runCode(t *testing.T, dir string, env []string, code int, args ...string) runJSON {
	t.Helper()
	r := idemsync(t, dir, env, append(args, "--json")...)
	if r.code != code {
		t.Fatalf("idemsync %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, r.code, code, r.stdout, r.stderr)
	}
	return parseRun(t, r)
}

// deadLetterJSON is one record of status --dead-letters --json.
type deadLetterJSON struct {
	ID       int64  `json:"id"`
	Job      string `json:"job"`
	RunID    int64  `json:"run_id"`
	Position string `json:"position"`
	Index    int    `json:"index"`
	Reason   string `json:"reason"`
	Raw      string `json:"raw"`
}

// jobStatusJSON is one job of status --json.
type jobStatusJSON struct {
	Name        string           `json:"name"`
	Status      string           `json:"status"`
	Checkpoint  string           `json:"checkpoint"`
	HWM         string           `json:"hwm"`
	LastRun     *runJSON         `json:"last_run"`
	DeadLetters int64            `json:"dead_letters"`
	Dead        []deadLetterJSON `json:"dead_letter_records"`
}

// statusOf returns the job's entry of `status JOB --json` (plus args).
func statusOf(t *testing.T, dir, job string, args ...string) jobStatusJSON {
	t.Helper()
	r := idemsync(t, dir, nil, append([]string{"status", job, "--json"}, args...)...)
	var out struct {
		Jobs []jobStatusJSON `json:"jobs"`
	}
	if r.code != 0 {
		t.Fatalf("status: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Jobs) != 1 {
		t.Fatalf("status --json: %v: %s", err, r.stdout)
	}
	return out.Jobs[0]
}

// deleteIDs deletes rows of the orders table of a SQLite target directly,
// as an operator repairing a table would.
func deleteIDs(t *testing.T, path string, ids ...int) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range ids {
		res, err := db.Exec(`DELETE FROM orders WHERE id = ?`, id)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("delete id %d: %d rows", id, n)
		}
	}
}

// idRange returns the integers from..to inclusive.
func idRange(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// serve serves h on a test server for the test's lifetime and returns its URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// runPasses runs job in dir up to passes times, stopping at the first run
// that does not exit 0, and returns the last run.
func runPasses(t *testing.T, dir, job string, passes int) result {
	t.Helper()
	var last result
	for range passes {
		if last = idemsync(t, dir, nil, "run", job, "--json"); last.code != 0 {
			break
		}
	}
	return last
}

// queryLog is an http.Handler that records the query of every request
// before passing it on.
type queryLog struct {
	h  http.Handler
	mu gosync.Mutex
	qs []url.Values
}

func (l *queryLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.qs = append(l.qs, r.URL.Query())
	l.mu.Unlock()
	l.h.ServeHTTP(w, r)
}

// values returns the distinct values of query parameter name seen since the
// last reset ("" for requests without it), and forgets them.
func (l *queryLog) values(name string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, q := range l.qs {
		if v := q.Get(name); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	l.qs = nil
	return out
}

// openSQLite opens a SQLite file for the test's lifetime.
func openSQLite(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
