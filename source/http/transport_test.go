package httpsource

import (
	"context"
	"net/http"
	"strings"
	gosync "sync"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// Waiting for the rate limiter does not consume a request's timeout: with
// rate_limit 1, four requests in flight and a 2s timeout against a healthy
// API, every request succeeds (the fourth waits about 3s for its token).
func TestRateLimitWaitDoesNotCountAgainstTimeout(t *testing.T) {
	api := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, okPage) })
	f, _ := newTestFetcher(t, fetchSpec(api.URL, "  rate_limit: 1\n  timeout: 2s\n", "  attempts: 1\n"), nil)
	var wg gosync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.Fetch(context.Background(), contract.Request{URL: api.URL})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
}

// The per-attempt timeout still bounds a slow API, body read included.
func TestTimeoutStillBoundsSlowBody(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	api := newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`{"data":[`))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f, _ := newTestFetcher(t, fetchSpec(api.URL, "  timeout: 200ms\n", "  attempts: 1\n"), nil)
	e := fetchErr(t, f, api.URL)
	if e.Class != contract.Transient || !strings.Contains(e.Error(), "timed out") && !strings.Contains(e.Error(), "deadline") {
		t.Errorf("got %v %v, want a transient timeout", e.Class, e)
	}
}
