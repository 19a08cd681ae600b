package httpsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
)

// hit is one request as the test server saw it.
type hit struct {
	at     time.Time
	url    string
	header http.Header
}

// apiServer is an httptest server that records every request's arrival
// time and answers attempt n (from 0) with handle.
type apiServer struct {
	*httptest.Server
	mu     gosync.Mutex
	hits   []hit
	handle func(n int, w http.ResponseWriter, r *http.Request)
}

func newAPIServer(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) *apiServer {
	t.Helper()
	s := &apiServer{handle: handle}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		s.mu.Lock()
		n, handle := len(s.hits), s.handle
		s.hits = append(s.hits, hit{at: at, url: r.URL.String(), header: r.Header.Clone()})
		s.mu.Unlock()
		handle(n, w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// setHandle replaces the handler for requests that arrive later.
func (s *apiServer) setHandle(handle func(n int, w http.ResponseWriter, r *http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handle = handle
}

func (s *apiServer) requests() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hit(nil), s.hits...)
}

// okPage is a valid page of two records.
const okPage = `{"data":[{"id":1},{"id":2}]}`

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// fetchSpec returns a job file for url; source and retry are extra YAML
// lines, indented under source: and retry:.
func fetchSpec(url, source, retry string) string {
	if retry == "" {
		retry = "  attempts: 3\n  min_wait: 1ms\n  max_wait: 20ms\n"
	}
	if !strings.Contains(source, "timeout:") {
		source += "  timeout: 2s\n"
	}
	return fmt.Sprintf(`name: fetch-test
source:
  url: %s
  records: data
%sretry:
%starget:
  url: sqlite:out.db
  table: t
  key: [id]
`, url, source, retry)
}

// newTestFetcher loads spec (with environment env) and returns its fetcher
// and the buffer its debug-level logger writes to.
func newTestFetcher(t *testing.T, spec string, envVars map[string]string) (*Fetcher, *bytes.Buffer) {
	t.Helper()
	job, err := jobfile.Load([]byte(spec), filepath.Join(t.TempDir(), "job.yaml"), env(envVars))
	if err != nil {
		t.Fatalf("load spec: %v\n%s", err, spec)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return NewFetcher(ConfigOf(job), logger), &logs
}

// syncWriter serialises writes to a buffer shared with server goroutines.
type syncWriter struct {
	mu gosync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func fetchErr(t *testing.T, f *Fetcher, url string) *contract.Error {
	t.Helper()
	resp, err := f.Fetch(context.Background(), contract.Request{URL: url})
	if err == nil {
		t.Fatalf("fetch succeeded with %d records, want an error", len(resp.Records))
	}
	var e *contract.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not an *contract.Error", err, err)
	}
	return e
}

// No request is sent before the wait a Retry-After asks for has elapsed,
// capped by retry.max_wait; a date in the past or garbage falls back to the
// backoff. Arrival times are taken at the server, so the measured gap can
// only be longer than the client's wait, never shorter.
func TestFetchHonoursRetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		maxWait string
		header  func() (value string, notBefore time.Time) // notBefore: zero when only the gap counts
		minGap  time.Duration
		maxGap  time.Duration // a permissive bound: far above the expected wait
	}{
		{"seconds", "5s", func() (string, time.Time) { return "1", time.Time{} }, time.Second, 4 * time.Second},
		{"http date", "5s", func() (string, time.Time) {
			at := time.Now().Add(2 * time.Second).Truncate(time.Second)
			return at.UTC().Format(http.TimeFormat), at
		}, 0, 4 * time.Second},
		{"capped by max_wait", "300ms", func() (string, time.Time) { return "30", time.Time{} }, 300 * time.Millisecond, 10 * time.Second},
		{"date capped by max_wait", "300ms", func() (string, time.Time) {
			return time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), time.Time{}
		}, 300 * time.Millisecond, 10 * time.Second},
		{"date in the past", "5s", func() (string, time.Time) {
			return time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), time.Time{}
		}, 50 * time.Millisecond, 4 * time.Second},
		{"garbage", "5s", func() (string, time.Time) { return "soon", time.Time{} }, 50 * time.Millisecond, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var notBefore time.Time
			srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 0 {
					var v string
					v, notBefore = tt.header()
					w.Header().Set("Retry-After", v)
					writeJSON(w, http.StatusTooManyRequests, `{"error":"slow down"}`)
					return
				}
				writeJSON(w, http.StatusOK, okPage)
			})
			f, _ := newTestFetcher(t, fetchSpec(srv.URL, "", "  attempts: 2\n  min_wait: 50ms\n  max_wait: "+tt.maxWait+"\n"), nil)
			resp, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			hits := srv.requests()
			if len(hits) != 2 || resp.Attempts != 2 || len(resp.Records) != 2 {
				t.Fatalf("%d requests, %d attempts, %d records; want 2, 2, 2", len(hits), resp.Attempts, len(resp.Records))
			}
			gap := hits[1].at.Sub(hits[0].at)
			if gap < tt.minGap {
				t.Errorf("retry sent %v after the 429, before the %v it had to wait", gap, tt.minGap)
			}
			if !notBefore.IsZero() && hits[1].at.Before(notBefore) {
				t.Errorf("retry arrived at %s, before the Retry-After date %s", hits[1].at.UTC().Format(time.StampMilli), notBefore.UTC().Format(time.StampMilli))
			}
			if gap > tt.maxGap {
				t.Errorf("retry waited %v; max_wait %s should have capped it", gap, tt.maxWait)
			}
			t.Logf("retry after %v", gap.Round(time.Millisecond))
		})
	}
}

// Attempts stop at retry.attempts (the first one included); exhausting them
// is a transient failure (exit 3) that names the status and the count.
func TestFetchStopsAtAttempts(t *testing.T) {
	for _, attempts := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(attempts), func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				writeJSON(w, http.StatusServiceUnavailable, `{"error":"down"}`)
			})
			f, logs := newTestFetcher(t, fetchSpec(srv.URL, "", fmt.Sprintf("  attempts: %d\n  min_wait: 1ms\n  max_wait: 5ms\n", attempts)), nil)
			e := fetchErr(t, f, srv.URL)
			if got := len(srv.requests()); got != attempts {
				t.Errorf("%d requests, want exactly %d", got, attempts)
			}
			if e.Class != contract.Transient {
				t.Errorf("exit code %d, want %d", e.Class, contract.Transient)
			}
			for _, want := range []string{"HTTP 503", fmt.Sprintf("after %d attempt(s)", attempts), `{"error":"down"}`} {
				if !strings.Contains(e.Error(), want) {
					t.Errorf("error %q does not say %q", e.Error(), want)
				}
			}
			if got := strings.Count(logs.String(), "retrying request"); got < attempts-1 {
				t.Errorf("%d retry warnings logged, want %d", got, attempts-1)
			}
		})
	}
}

// A permanent status fails at once, without a retry, naming the status
// and an excerpt of the body.
func TestFetchPermanentStatusFailsAtOnce(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 422} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				writeJSON(w, status, `{"error":"nope"}`)
			})
			f, _ := newTestFetcher(t, fetchSpec(srv.URL, "", "  attempts: 5\n  min_wait: 1ms\n  max_wait: 5ms\n"), nil)
			e := fetchErr(t, f, srv.URL)
			if got := len(srv.requests()); got != 1 {
				t.Errorf("%d requests, want 1 (no retry)", got)
			}
			if e.Class != contract.Permanent {
				t.Errorf("exit code %d, want %d", e.Class, contract.Permanent)
			}
			for _, want := range []string{fmt.Sprintf("HTTP %d %s", status, http.StatusText(status)), "nope"} {
				if !strings.Contains(e.Error(), want) {
					t.Errorf("error %q does not say %q", e.Error(), want)
				}
			}
			if !strings.Contains(contract.Hint(e), "not retried") {
				t.Errorf("hint %q does not say the status was not retried", contract.Hint(e))
			}
		})
	}
}

// transientFaults are first answers that must be retried, each with the
// words the final error must contain when every attempt gets it.
var transientFaults = []struct {
	name  string
	fault func(w http.ResponseWriter, r *http.Request)
	says  []string
}{
	{"408", status(408), []string{"HTTP 408"}},
	{"425", status(425), []string{"HTTP 425"}},
	{"429", status(429), []string{"HTTP 429"}},
	{"500", status(500), []string{"HTTP 500"}},
	{"502", status(502), []string{"HTTP 502"}},
	{"503", status(503), []string{"HTTP 503"}},
	{"504", status(504), []string{"HTTP 504"}},
	{"503 html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(503)
		_, _ = w.Write([]byte("<html><body><h1>Down for maintenance</h1></body></html>"))
	}, []string{"HTTP 503", "Content-Type text/html", "Down for maintenance"}},
	{"200 invalid JSON", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"data":[{"id":1},{"id":`)
	}, []string{"invalid JSON body", "Content-Type application/json"}},
	{"200 empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }, []string{"invalid JSON body", "empty body"}},
	{"truncated", func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(okPage), okPage[:len(okPage)/2])
		_ = buf.Flush()
	}, []string{"body cut short", "unexpected EOF"}},
	{"reset", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		conn.Close()
	}, []string{"after 2 attempt(s)"}},
	{"error payload", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"error":{"message":"internal"},"data":[]}`)
	}, []string{"error payload at error", "internal"}},
	{"slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}, []string{"timed out"}},
}

func status(code int) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) { writeJSON(w, code, `{"error":"x"}`) }
}

// Every transient failure is retried: one bad answer then a good one is a
// success; bad answers until retries run out is an exit-3 error naming the
// cause (and the content type of a body that is not JSON).
func TestFetchRetriesTransientFailures(t *testing.T) {
	// The attempt timeout is long enough that a loaded machine never cuts
	// an attempt before the server has answered it (which would count one
	// request fewer, or move the fault to the second attempt); only "slow"
	// waits it out.
	const source = "  timeout: 2s\n  error_path: error\n"
	for _, tt := range transientFaults {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			once := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 0 {
					tt.fault(w, r)
					return
				}
				writeJSON(w, 200, okPage)
			})
			f, _ := newTestFetcher(t, fetchSpec(once.URL, source, "  attempts: 2\n  min_wait: 1ms\n  max_wait: 5ms\n"), nil)
			resp, err := f.Fetch(context.Background(), contract.Request{URL: once.URL})
			if err != nil {
				t.Fatalf("one fault then a good page: %v", err)
			}
			if resp.Attempts != 2 || len(resp.Records) != 2 {
				t.Errorf("%d attempts, %d records; want 2 and 2", resp.Attempts, len(resp.Records))
			}

			always := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) { tt.fault(w, r) })
			f, _ = newTestFetcher(t, fetchSpec(always.URL, source, "  attempts: 2\n  min_wait: 1ms\n  max_wait: 5ms\n"), nil)
			e := fetchErr(t, f, always.URL)
			if e.Class != contract.Transient {
				t.Errorf("exit code %d, want %d: %v", e.Class, contract.Transient, e)
			}
			if n := len(always.requests()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
			for _, want := range tt.says {
				if !strings.Contains(e.Error(), want) {
					t.Errorf("error %q does not say %q", e.Error(), want)
				}
			}
		})
	}
}

// source.error_path: present and non-empty in a 2xx body fails the page
// (retried as transient); null, "", false, {} and [] do not.
func TestFetchErrorPath(t *testing.T) {
	tests := []struct {
		path, body string
		failed     bool
	}{
		{"error", `{"error":"boom","data":[]}`, true},
		{"error", `{"error":{"message":"x"},"data":[]}`, true},
		{"error", `{"error":42,"data":[]}`, true},
		{"error", `{"error":true,"data":[]}`, true},
		{"errors", `{"errors":[{"m":"x"}],"data":[]}`, true},
		{"meta.error.code", `{"meta":{"error":{"code":"E1"}},"data":[]}`, true},
		{"error", `{"error":null,"data":[{"id":1}]}`, false},
		{"error", `{"error":"","data":[{"id":1}]}`, false},
		{"error", `{"error":false,"data":[{"id":1}]}`, false},
		{"error", `{"error":{},"data":[{"id":1}]}`, false},
		{"errors", `{"errors":[],"data":[{"id":1}]}`, false},
		{"error", `{"data":[{"id":1}]}`, false},
	}
	for _, tt := range tests {
		srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, tt.body) })
		f, _ := newTestFetcher(t, fetchSpec(srv.URL, "  error_path: "+tt.path+"\n", "  attempts: 2\n  min_wait: 1ms\n  max_wait: 2ms\n"), nil)
		_, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL})
		switch {
		case tt.failed && err == nil:
			t.Errorf("%s in %s: accepted as a page", tt.path, tt.body)
		case tt.failed && (contract.ClassOf(err) != contract.Transient || !strings.Contains(err.Error(), "error payload at "+tt.path)):
			t.Errorf("%s in %s: %v (%v), want exit 3 naming the path", tt.path, tt.body, err, contract.ClassOf(err))
		case tt.failed && len(srv.requests()) != 2:
			t.Errorf("%s in %s: %d requests, want 2 (retried)", tt.path, tt.body, len(srv.requests()))
		case !tt.failed && err != nil:
			t.Errorf("%s in %s: %v, want a page", tt.path, tt.body, err)
		}
	}
	// Without error_path, an error payload is still no empty last page: the
	// records path is missing, which is a permanent error naming it.
	srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"error":{"message":"internal"}}`)
	})
	f, _ := newTestFetcher(t, fetchSpec(srv.URL, "", ""), nil)
	if e := fetchErr(t, f, srv.URL); e.Class != contract.Permanent || !strings.Contains(e.Error(), "records path data not found") || !strings.Contains(e.Error(), "error") {
		t.Errorf("error payload without error_path: %v (%v)", e, e.Class)
	}
}

func env(m map[string]string) jobfile.LookupFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
