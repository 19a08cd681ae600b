package cmd

import (
	"bytes"
	"context"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// syncBuffer is a bytes.Buffer safe for the concurrent writers of a run
// (logs from the fetchers and the committer, the progress bar).
type syncBuffer struct {
	mu  gosync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// result is one finished command.
type result struct {
	code           int
	stdout, stderr string
}

// execute runs the command line in-process with buffers; tty says whether
// stderr pretends to be a terminal.
func execute(t *testing.T, tty bool, args ...string) result {
	t.Helper()
	t.Setenv("IDEMSYNC_STATE", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut syncBuffer
	code := Execute(ctx, args, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, ErrTTY: tty})
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// startAPI serves a fake API for the test's lifetime and returns its URL.
func startAPI(t *testing.T, opts fakeapi.Options) (*fakeapi.API, string) {
	t.Helper()
	api := fakeapi.New(opts)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return api, srv.URL
}

// pageJob is a page-style job on the fake API's /page route, with fast
// retries. Its state file is state.db in the job's folder.
func pageJob(name, url string) string {
	return `name: ` + name + `
state: state.db
source:
  url: ` + url + `/page
  records: data
pagination:
  style: page
  size_param: per_page
  size: 50
  total_pages: meta.total_pages
retry:
  min_wait: 5ms
  max_wait: 20ms
target:
  url: sqlite:out.db
  table: ` + strings.ReplaceAll(name, "-", "_") + `
  key: [id]
  columns:
    id: {path: id, type: integer}
    email: customer.email
    total: {path: total, type: numeric}
`
}

// writeJob writes a job file into dir and returns its path.
func writeJob(t *testing.T, dir, file, spec string) string {
	t.Helper()
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// golden compares got with testdata/NAME, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test ./cmd -update after checking it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
