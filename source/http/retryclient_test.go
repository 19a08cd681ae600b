package httpsource

import (
	"context"
	"net/http"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// One go-retryablehttp client serves every Fetch of a fetcher (built once,
// in NewFetcher), and fetches in flight on it at once each announce their
// own retries: the URL and reason of their own failed attempt, never the
// other fetch's.
func TestOneRetryClientServesConcurrentFetches(t *testing.T) {
	var busy, broken atomic.Int32
	srv := newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/busy" && busy.Add(1) <= 2:
			writeJSON(w, 503, `{"error":"down"}`)
		case r.URL.Path == "/broken" && broken.Add(1) <= 2:
			writeJSON(w, 200, `{"items":[{"id":1}`) // cut short
		default:
			writeJSON(w, 200, okPage)
		}
	})
	f, logs := newTestFetcher(t, fetchSpec(srv.URL, "", "  attempts: 5\n  min_wait: 1ms\n  max_wait: 5ms\n"), nil)
	client := f.retry
	if client == nil {
		t.Fatal("NewFetcher built no retrying client")
	}
	var wg gosync.WaitGroup
	for _, p := range []string{"/busy", "/broken"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL + p}); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}()
	}
	wg.Wait()
	if f.retry != client {
		t.Error("a Fetch replaced the fetcher's retrying client")
	}
	out := logs.String()
	retries := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, `msg="retrying request"`) {
			continue
		}
		retries++
		busy := strings.Contains(line, "/busy")
		if busy != strings.Contains(line, `reason="HTTP 503"`) || !busy && !strings.Contains(line, "invalid JSON body") {
			t.Errorf("a retry announced with another fetch's reason: %s", line)
		}
	}
	if retries != 4 {
		t.Fatalf("%d retries announced, want 4:\n%s", retries, out)
	}
}

// CheckRetry decides from the response or error alone: asking twice about
// the same answer gives the same decision, whatever came before.
func TestCheckRetryIsPure(t *testing.T) {
	var status int
	srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/503":
			writeJSON(w, 503, `{"error":"down"}`)
		case "/404":
			writeJSON(w, 404, `{"error":"gone"}`)
		case "/cut":
			writeJSON(w, 200, `{"items":[`)
		default:
			writeJSON(w, 200, okPage)
		}
	})
	f, _ := newTestFetcher(t, fetchSpec(srv.URL, "", "  attempts: 1\n"), nil)
	for _, tc := range []struct {
		path  string
		retry bool
		fail  bool
	}{{"/503", true, false}, {"/ok", false, false}, {"/404", false, true}, {"/cut", true, false}, {"/ok", false, false}} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := f.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		status = resp.StatusCode
		for range 2 {
			retry, err := f.checkRetry(context.Background(), resp, nil)
			if retry != tc.retry || (err != nil) != tc.fail {
				t.Errorf("%s (HTTP %d): CheckRetry = %v, %v; want retry %v, failure %v", tc.path, status, retry, err, tc.retry, tc.fail)
			}
		}
	}
}

// An attempt that gets no answer (the connection dropped) reaches the
// client's Backoff hook all the same (attemptTransport answers it with
// status 0): each retry is announced before its wait, naming the request
// and the network error, and the page then arrives with its attempt count.
func TestNetworkErrorRetryAnnounced(t *testing.T) {
	srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 2 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // no answer at all
			}
			return
		}
		writeJSON(w, 200, okPage)
	})
	f, logs := newTestFetcher(t, fetchSpec(srv.URL, "", "  attempts: 3\n  min_wait: 1ms\n  max_wait: 5ms\n"), nil)
	var events []RetryEvent
	f.OnRetry = func(ev RetryEvent) { events = append(events, ev) }
	resp, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL + "/dropped"})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if resp.Attempts != 3 || resp.Status != 200 || len(resp.Records) != 2 {
		t.Errorf("attempts %d, status %d, %d records; want 3, 200, 2", resp.Attempts, resp.Status, len(resp.Records))
	}
	if len(events) != 2 || events[0].Attempt != 1 || events[1].Attempt != 2 || events[0].Reason == "" || strings.Contains(events[0].Reason, "HTTP") {
		t.Errorf("retry events %+v, want attempts 1 and 2 with the network error as reason", events)
	}
	if n := strings.Count(logs.String(), `msg="retrying request" url=`+srv.URL+"/dropped"); n != 2 {
		t.Errorf("%d retry warnings naming the request, want 2:\n%s", n, logs.String())
	}
}
