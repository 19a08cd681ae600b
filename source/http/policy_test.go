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
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

// Policies of the fetcher: logging, redirects and origins, TLS, the
// checkpoint form of next URLs, the rate limit and decompression.

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
	f.retry.Logger = retryLogger{log: f.logger, red: f.cfg.Secrets}
	fetchErr(t, f, u)
	if strings.Contains(quiet.String(), "http client:") || !strings.Contains(quiet.String(), "retrying request") {
		t.Errorf("info-level logs:\n%s", quiet.String())
	}
}

// A redirect to another origin (another port counts) that
// source.follow_origins allows never carries the job's headers; a
// same-origin redirect keeps them.
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
	spec := fetchSpec(first.URL, "  headers: {X-Api-Key: \"${KEY}\", Authorization: \"Bearer ${TOKEN}\", Cookie: \"session=${TOKEN}\"}\n  follow_origins: [\""+other.URL+"\"]\n", "")
	f, logs := newTestFetcher(t, spec, map[string]string{"KEY": "key-123456", "TOKEN": "token-123456"})
	if _, err := f.Fetch(context.Background(), contract.Request{URL: first.URL + "/away"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(context.Background(), contract.Request{URL: first.URL + "/home"}); err != nil {
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
	if e.Class != contract.Permanent || !strings.Contains(e.Error(), "certificate") {
		t.Errorf("self-signed certificate: %v (%v)", e, e.Class)
	}
	f, logs := newTestFetcher(t, fetchSpec(srv.URL, "  insecure_skip_tls_verify: true\n", ""), nil)
	if _, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL}); err != nil {
		t.Errorf("with insecure_skip_tls_verify: %v", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "TLS certificate verification is OFF") {
		t.Errorf("no warning for the opt-out:\n%s", logs.String())
	}
}

// A next URL is stored without the source.query values and credentials it
// repeats (secrets), and BuildURL restores them for the request: the round
// trip requests the same page with the same credentials, the next URL's
// own parameters first, as the API wrote them.
func TestCheckpointURLRoundTrip(t *testing.T) {
	spec := fetchSpec("http://user:pw-secret-1@api.example.com/v1/items", "  query: {api_key: \"${KEY}\", status: any}\n", "")
	f, _ := newTestFetcher(t, spec, map[string]string{"KEY": "key-secret-1"})
	tests := []struct {
		next, stored, request string
	}{
		// The API echoed the query: stripped, then added back.
		{"http://api.example.com/v1/items?api_key=key-secret-1&cursor=abc&status=any",
			"http://api.example.com/v1/items?cursor=abc",
			"http://user:pw-secret-1@api.example.com/v1/items?cursor=abc&api_key=key-secret-1&status=any"},
		// Resolved against the request URL, a relative link carries its
		// credentials: stripped, then added back on the same origin.
		{"http://user:pw-secret-1@api.example.com/v1/items?page=2",
			"http://api.example.com/v1/items?page=2",
			"http://user:pw-secret-1@api.example.com/v1/items?page=2&api_key=key-secret-1&status=any"},
		// A value the API changed is the API's own: kept.
		{"http://api.example.com/v1/items?status=all&after=9",
			"http://api.example.com/v1/items?status=all&after=9",
			"http://user:pw-secret-1@api.example.com/v1/items?status=all&after=9&api_key=key-secret-1"},
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
		if f.cfg.Secrets.Redact(stored) != stored {
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
	if e.Class != contract.Permanent || !strings.Contains(e.Error(), "larger than source.max_body (1048576 bytes)") {
		t.Errorf("gzip bomb (%d KiB compressed): %v (%v)", zipped.Len()>>10, e, e.Class)
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
	if e.Class != contract.Permanent || !strings.Contains(e.Error(), "stopped after 10 redirects") {
		t.Errorf("redirect loop: %v (%v)", e, e.Class)
	}
	if n := len(srv.requests()); n != 10 {
		t.Errorf("%d requests, want 10 (one attempt, not retried)", n)
	}
}
