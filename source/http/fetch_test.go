package httpsource

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	idsync "github.com/idemsync/idemsync/sync"
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
	job, err := idsync.Load([]byte(spec), filepath.Join(t.TempDir(), "job.yaml"), env(envVars))
	if err != nil {
		t.Fatalf("load spec: %v\n%s", err, spec)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return NewFetcher(job, logger), &logs
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

func fetchErr(t *testing.T, f *Fetcher, url string) *idsync.Error {
	t.Helper()
	resp, err := f.Fetch(context.Background(), url)
	if err == nil {
		t.Fatalf("fetch succeeded with %d records, want an error", len(resp.Records))
	}
	var e *idsync.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not an *idsync.Error", err, err)
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
			resp, err := f.Fetch(context.Background(), srv.URL)
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
			if e.Code != idsync.ExitTransient {
				t.Errorf("exit code %d, want %d", e.Code, idsync.ExitTransient)
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
			if e.Code != idsync.ExitPermanent {
				t.Errorf("exit code %d, want %d", e.Code, idsync.ExitPermanent)
			}
			for _, want := range []string{fmt.Sprintf("HTTP %d %s", status, http.StatusText(status)), "nope"} {
				if !strings.Contains(e.Error(), want) {
					t.Errorf("error %q does not say %q", e.Error(), want)
				}
			}
			if !strings.Contains(idsync.Hint(e), "not retried") {
				t.Errorf("hint %q does not say the status was not retried", idsync.Hint(e))
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
		case <-time.After(5 * time.Second):
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
	const source = "  timeout: 300ms\n  error_path: error\n"
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
			resp, err := f.Fetch(context.Background(), once.URL)
			if err != nil {
				t.Fatalf("one fault then a good page: %v", err)
			}
			if resp.Attempts != 2 || len(resp.Records) != 2 {
				t.Errorf("%d attempts, %d records; want 2 and 2", resp.Attempts, len(resp.Records))
			}

			always := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) { tt.fault(w, r) })
			f, _ = newTestFetcher(t, fetchSpec(always.URL, source, "  attempts: 2\n  min_wait: 1ms\n  max_wait: 5ms\n"), nil)
			e := fetchErr(t, f, always.URL)
			if e.Code != idsync.ExitTransient {
				t.Errorf("exit code %d, want %d: %v", e.Code, idsync.ExitTransient, e)
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
		_, err := f.Fetch(context.Background(), srv.URL)
		switch {
		case tt.failed && err == nil:
			t.Errorf("%s in %s: accepted as a page", tt.path, tt.body)
		case tt.failed && (idsync.ExitCode(err) != idsync.ExitTransient || !strings.Contains(err.Error(), "error payload at "+tt.path)):
			t.Errorf("%s in %s: %v (exit %d), want exit 3 naming the path", tt.path, tt.body, err, idsync.ExitCode(err))
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
	if e := fetchErr(t, f, srv.URL); e.Code != idsync.ExitPermanent || !strings.Contains(e.Error(), "records path data not found") || !strings.Contains(e.Error(), "error") {
		t.Errorf("error payload without error_path: %v (exit %d)", e, e.Code)
	}
}

// A body larger than source.max_body is a permanent error naming the limit,
// read no further than the limit and not retried.
func TestFetchBodyLimit(t *testing.T) {
	const limit = 1024
	body := `{"data":[{"id":1,"pad":"` + strings.Repeat("x", limit) + `"}]}`
	srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, body) })
	f, _ := newTestFetcher(t, fetchSpec(srv.URL, "  max_body: 1KiB\n", ""), nil)
	e := fetchErr(t, f, srv.URL)
	if e.Code != idsync.ExitPermanent || !strings.Contains(e.Error(), "larger than source.max_body (1024 bytes)") {
		t.Errorf("over max_body: %v (exit %d)", e, e.Code)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	exact := `{"data":[{"id":1,"pad":"` + strings.Repeat("x", limit-len(`{"data":[{"id":1,"pad":""}]}`)) + `"}]}`
	srv = newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, exact) })
	f, _ = newTestFetcher(t, fetchSpec(srv.URL, "  max_body: 1KiB\n", ""), nil)
	if _, err := f.Fetch(context.Background(), srv.URL); err != nil {
		t.Errorf("a body of exactly max_body (%d bytes): %v", len(exact), err)
	}
}

// nested returns a page whose one record holds n nested arrays.
func nested(n int) string {
	return `{"data":[{"id":1,"deep":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}]}`
}

// Deeply nested JSON is refused with a clear permanent error; it must not
// overflow the stack (10 million levels did, in gjson, before the check).
func TestFetchDeeplyNestedJSON(t *testing.T) {
	for _, n := range []int{100_000, 10_000_000} {
		body := nested(n)
		srv := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, body) })
		f, _ := newTestFetcher(t, fetchSpec(srv.URL, "", ""), nil)
		e := fetchErr(t, f, srv.URL)
		if e.Code != idsync.ExitPermanent || !strings.Contains(e.Error(), "nested deeper than 10000 levels") {
			t.Errorf("%d levels: %v (exit %d)", n, e, e.Code)
		}
		if got := len(srv.requests()); got != 1 {
			t.Errorf("%d levels: %d requests, want 1", n, got)
		}
		// The same body as an error response is described, not parsed.
		srv.setHandle(func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 500, body) })
		if e := fetchErr(t, f, srv.URL); e.Code != idsync.ExitTransient || !strings.Contains(e.Error(), "HTTP 500") {
			t.Errorf("%d levels in a 500: %v (exit %d)", n, e, e.Code)
		}
	}
	body := nested(MaxJSONDepth - 3)
	srv := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, body) })
	f, _ := newTestFetcher(t, fetchSpec(srv.URL, "", ""), nil)
	if resp, err := f.Fetch(context.Background(), srv.URL); err != nil || len(resp.Records) != 1 {
		t.Errorf("%d levels (within the limit): %v", MaxJSONDepth-3, err)
	}
}

func TestJSONDepthExceeds(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  bool
	}{
		{`[[[]]]`, 3, false},
		{`[[[[]]]]`, 3, true},
		{`{"a":{"b":{"c":1}}}`, 3, false},
		{`{"a":{"b":{"c":{}}}}`, 3, true},
		{`["[[[[[[", "{{{{"]`, 1, false},
		{`["\"[[[[", {}]`, 1, true},
		{`["\\", [[]]]`, 2, true},
		{`"[[[["`, 0, false},
	}
	for _, tt := range tests {
		if got := jsonDepthExceeds([]byte(tt.in), tt.limit); got != tt.want {
			t.Errorf("jsonDepthExceeds(%s, %d) = %v, want %v", tt.in, tt.limit, got, tt.want)
		}
	}
}

// The records path must lead to an array; anything else is a permanent
// error naming the path and what it found.
func TestFetchRecordsPath(t *testing.T) {
	tests := []struct {
		records, body string
		n             int
		err           string
	}{
		{"data", `{"data":[{"id":1},{"id":2}]}`, 2, ""},
		{"data", `{"data":null}`, 0, ""},
		{"data", `{"data":[]}`, 0, ""},
		{"data.items", `{"data":{"items":[{"id":1}]}}`, 1, ""},
		{"data", `{"data":{"id":1}}`, 0, "records path data is an object, not an array of records"},
		{"data", `{"data":"x"}`, 0, "records path data is a string, not an array of records"},
		{"data", `{"data":3}`, 0, "records path data is a number"},
		{"data", `{"items":[],"meta":{}}`, 0, "records path data not found in the response (top-level keys: items, meta)"},
		{"", `{"id":1}`, 0, "the response body is an object, not an array of records"},
		{"", `[{"id":1}]`, 1, ""},
	}
	for _, tt := range tests {
		srv := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, tt.body) })
		spec := fetchSpec(srv.URL, "", "")
		if tt.records == "" {
			spec = strings.Replace(spec, "  records: data\n", "", 1)
		} else {
			spec = strings.Replace(spec, "records: data", "records: "+tt.records, 1)
		}
		f, _ := newTestFetcher(t, spec, nil)
		resp, err := f.Fetch(context.Background(), srv.URL)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("records %q in %s: %v", tt.records, tt.body, err)
		case tt.err == "" && len(resp.Records) != tt.n:
			t.Errorf("records %q in %s: %d records, want %d", tt.records, tt.body, len(resp.Records), tt.n)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || idsync.ExitCode(err) != idsync.ExitPermanent):
			t.Errorf("records %q in %s: %v (exit %d), want exit 1 saying %q", tt.records, tt.body, err, idsync.ExitCode(err), tt.err)
		case tt.err != "" && len(srv.requests()) != 1:
			t.Errorf("records %q in %s: %d requests, want 1", tt.records, tt.body, len(srv.requests()))
		}
	}
}

// go-retryablehttp logs through the job's slog logger, at debug level, with
// ${VAR} values redacted (the library itself only hides URL passwords).
func TestFetchRetryablehttpLogsThroughSlog(t *testing.T) {
	const canary = "CanaryQ7x9Secret"
	srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 503, `{"error":"down"}`)
	})
	spec := fetchSpec(srv.URL, "  query: {api_key: \"${CANARY}\"}\n", "  attempts: 2\n  min_wait: 1ms\n  max_wait: 2ms\n")
	f, logs := newTestFetcher(t, spec, map[string]string{"CANARY": canary})
	u, err := f.BuildURL(srv.URL, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	e := fetchErr(t, f, u)
	if hits := srv.requests(); len(hits) != 2 || !strings.Contains(hits[0].url, canary) {
		t.Fatalf("the API did not get the query parameter: %+v", hits)
	}
	out := logs.String()
	for _, want := range []string{"http client: performing request", "http client: retrying request", "level=DEBUG", idsync.Redacted} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, canary) || strings.Contains(e.Error(), canary) {
		t.Errorf("the query secret leaked:\nerror: %v\nlogs:\n%s", e, out)
	}

	// Below debug level the library says nothing; the fetcher's own retry
	// warning still does.
	var quiet bytes.Buffer
	f.logger = slog.New(slog.NewTextHandler(&quiet, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f.rlog = retryLogger{log: f.logger, red: f.job.Secrets}
	fetchErr(t, f, u)
	if strings.Contains(quiet.String(), "http client:") || !strings.Contains(quiet.String(), "retrying request") {
		t.Errorf("info-level logs:\n%s", quiet.String())
	}
}

// A redirect to another origin (another port counts) never carries the
// job's headers; a same-origin redirect keeps them.
func TestFetchRedirectStripsHeadersAcrossOrigins(t *testing.T) {
	other := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, okPage) })
	var first *apiServer
	first = newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/data", http.StatusFound)
		case "/home":
			http.Redirect(w, r, first.URL+"/data", http.StatusTemporaryRedirect)
		default:
			writeJSON(w, 200, okPage)
		}
	})
	spec := fetchSpec(first.URL, "  headers: {X-Api-Key: \"${KEY}\", Authorization: \"Bearer ${TOKEN}\", Cookie: \"session=${TOKEN}\"}\n", "")
	f, logs := newTestFetcher(t, spec, map[string]string{"KEY": "key-123456", "TOKEN": "token-123456"})
	if _, err := f.Fetch(context.Background(), first.URL+"/away"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(context.Background(), first.URL+"/home"); err != nil {
		t.Fatal(err)
	}
	got := other.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests at the other origin, want 1", len(got))
	}
	for _, h := range []string{"X-Api-Key", "Authorization", "Cookie"} {
		if v := got[0].header.Get(h); v != "" {
			t.Errorf("cross-origin redirect carried %s: %q", h, v)
		}
	}
	home := first.requests()
	if len(home) != 3 || home[2].url != "/data" || home[2].header.Get("X-Api-Key") != "key-123456" || home[2].header.Get("Authorization") != "Bearer token-123456" {
		t.Errorf("same-origin redirect lost the headers: %+v", home)
	}
	if !strings.Contains(logs.String(), "configured headers not sent") {
		t.Errorf("no warning about the stripped headers:\n%s", logs.String())
	}
}

// TLS is verified: a self-signed certificate fails permanently, naming the
// certificate; the per-job opt-out works and warns.
func TestFetchVerifiesTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, okPage) }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	f, _ := newTestFetcher(t, fetchSpec(srv.URL, "", ""), nil)
	e := fetchErr(t, f, srv.URL)
	if e.Code != idsync.ExitPermanent || !strings.Contains(e.Error(), "certificate") {
		t.Errorf("self-signed certificate: %v (exit %d)", e, e.Code)
	}
	f, logs := newTestFetcher(t, fetchSpec(srv.URL, "  insecure_skip_tls_verify: true\n", ""), nil)
	if _, err := f.Fetch(context.Background(), srv.URL); err != nil {
		t.Errorf("with insecure_skip_tls_verify: %v", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "TLS certificate verification is OFF") {
		t.Errorf("no warning for the opt-out:\n%s", logs.String())
	}
}

// A next URL is stored without the source.query values and credentials it
// repeats (secrets), and BuildURL restores them for the request: the round
// trip requests the same page with the same credentials.
func TestCheckpointURLRoundTrip(t *testing.T) {
	spec := fetchSpec("http://user:pw-secret-1@api.example.com/v1/items", "  query: {api_key: \"${KEY}\", status: any}\n", "")
	f, _ := newTestFetcher(t, spec, map[string]string{"KEY": "key-secret-1"})
	tests := []struct {
		next, stored, request string
	}{
		// The API echoed the query: stripped, then added back.
		{"http://api.example.com/v1/items?api_key=key-secret-1&cursor=abc&status=any",
			"http://api.example.com/v1/items?cursor=abc",
			"http://user:pw-secret-1@api.example.com/v1/items?api_key=key-secret-1&cursor=abc&status=any"},
		// Resolved against the request URL, a relative link carries its
		// credentials: stripped, then added back on the same origin.
		{"http://user:pw-secret-1@api.example.com/v1/items?page=2",
			"http://api.example.com/v1/items?page=2",
			"http://user:pw-secret-1@api.example.com/v1/items?api_key=key-secret-1&page=2&status=any"},
		// A value the API changed is the API's own: kept.
		{"http://api.example.com/v1/items?status=all&after=9",
			"http://api.example.com/v1/items?status=all&after=9",
			"http://user:pw-secret-1@api.example.com/v1/items?after=9&api_key=key-secret-1&status=all"},
		// Another origin never gets the credentials, nor source.query
		// (which may hold API keys).
		{"https://cdn.example.net/p2?api_key=key-secret-1",
			"https://cdn.example.net/p2",
			"https://cdn.example.net/p2"},
		// Nothing to strip: unchanged, byte for byte.
		{"http://api.example.com/v1/items?z=1&a=2", "http://api.example.com/v1/items?z=1&a=2", ""},
	}
	for _, tt := range tests {
		stored := f.CheckpointURL(tt.next)
		if stored != tt.stored {
			t.Errorf("CheckpointURL(%s) = %s, want %s", tt.next, stored, tt.stored)
		}
		if f.job.Secrets.Redact(stored) != stored {
			t.Errorf("stored URL %s holds a secret", stored)
		}
		if tt.request == "" {
			continue
		}
		got, err := f.BuildURL(stored, nil, true)
		if err != nil || got != tt.request {
			t.Errorf("BuildURL(%s) = %s, %v; want %s", stored, got, err, tt.request)
		}
	}
}

// source.rate_limit: however many workers wait at once, no window of one
// second (n/rate seconds for a fractional rate) sees more than n requests
// start.
func TestRateLimitWindow(t *testing.T) {
	// The limiter is driven on a virtual clock (ReserveN at a given
	// instant), so the property is checked exactly, whatever the load on
	// the machine: however requests arrive, no n+1 of them start within
	// window. Workers share one limiter, as the fetcher's do.
	tests := []struct {
		rate     float64
		n        int
		window   time.Duration
		requests int
		arrive   time.Duration // gap between arrivals of demand (0: all at once)
	}{
		{20, 20, time.Second, 48, 0},
		{20, 20, time.Second, 48, 30 * time.Millisecond},
		{2.5, 2, 800 * time.Millisecond, 6, 0},
		{2.5, 2, 800 * time.Millisecond, 6, 350 * time.Millisecond},
		{1, 1, time.Second, 5, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.rate, "/", tt.arrive), func(t *testing.T) {
			l := newLimiter(tt.rate)
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var starts []time.Time
			for i := range tt.requests {
				at := t0.Add(time.Duration(i) * tt.arrive)
				r := l.ReserveN(at, 1)
				if !r.OK() {
					t.Fatalf("reservation %d refused", i)
				}
				starts = append(starts, at.Add(r.DelayFrom(at)))
			}
			slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
			for i := range starts {
				if j := i + tt.n; j < len(starts) && starts[j].Sub(starts[i]) < tt.window {
					t.Fatalf("requests %d and %d start %v apart: %d in less than %v", i, j, starts[j].Sub(starts[i]), tt.n+1, tt.window)
				}
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := newLimiter(1)
	if err := l.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := l.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait after cancel: %v, want context.Canceled", err)
	}
}

// max_body bounds the decompressed body: a gzip bomb (100 MiB of JSON
// whitespace in about 100 KiB) is refused once the limit is passed.
func TestFetchGzipBomb(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write([]byte(`{"data":[`))
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for range 100 {
		_, _ = zw.Write(chunk)
	}
	_, _ = zw.Write([]byte(`]}`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	srv := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(zipped.Bytes())
	})
	f, _ := newTestFetcher(t, fetchSpec(srv.URL, "  max_body: 1MiB\n", ""), nil)
	e := fetchErr(t, f, srv.URL)
	if e.Code != idsync.ExitPermanent || !strings.Contains(e.Error(), "larger than source.max_body (1048576 bytes)") {
		t.Errorf("gzip bomb (%d KiB compressed): %v (exit %d)", zipped.Len()>>10, e, e.Code)
	}
}

// A redirect loop stops after 10 redirects with a permanent error.
func TestFetchRedirectLoop(t *testing.T) {
	var srv *apiServer
	srv = newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("%s/loop/%d", srv.URL, n), http.StatusFound)
	})
	f, _ := newTestFetcher(t, fetchSpec(srv.URL, "", ""), nil)
	e := fetchErr(t, f, srv.URL)
	if e.Code != idsync.ExitPermanent || !strings.Contains(e.Error(), "stopped after 10 redirects") {
		t.Errorf("redirect loop: %v (exit %d)", e, e.Code)
	}
	if n := len(srv.requests()); n != 10 {
		t.Errorf("%d requests, want 10 (one attempt, not retried)", n)
	}
}

func env(m map[string]string) idsync.LookupFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
