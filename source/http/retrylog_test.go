package httpsource

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// A request whose run ended (its context cancelled) while a retryable
// response was still arriving is not retried, and nothing says it is: no
// "retrying request" line and no retry event after the run's end.
func TestNoRetryLogAfterContextDone(t *testing.T) {
	started := make(chan struct{})
	srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"busy`))
		w.(http.Flusher).Flush()
		if n == 0 {
			close(started)
		}
		select { // the rest of the body never comes before the client gives up
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	f, logs := newTestFetcher(t, fetchSpec(srv.URL, "", "  attempts: 3\n  min_wait: 1ms\n  max_wait: 5ms\n"), nil)
	retries := 0
	f.OnRetry = func(RetryEvent) { retries++ }
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		time.Sleep(20 * time.Millisecond) // the client is reading the body
		cancel()
	}()
	_, err := f.Fetch(ctx, contract.Request{URL: srv.URL})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Fetch: %v, want context.Canceled", err)
	}
	if strings.Contains(logs.String(), "retrying request") || retries != 0 {
		t.Errorf("a retry was announced after the context was done (%d events):\n%s", retries, logs.String())
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
