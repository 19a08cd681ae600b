package httpsource

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"

	"github.com/idemsync/idemsync/jobfile"
)

// A 429 holds every worker of the job, not only the one that got it: no
// request of any worker reaches the server before the Retry-After ends.
func TestTooManyRequestsPausesAllWorkers(t *testing.T) {
	var mu gosync.Mutex
	var first429 time.Time
	var after []time.Time
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if n == 1 {
			first429 = time.Now()
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		after = append(after, time.Now())
		w.Write([]byte(`[]`))
	}))
	defer srv.Close()
	job, err := jobfile.Load([]byte("name: p\nsource: {url: '"+srv.URL+"'}\nretry: {min_wait: 10ms, max_wait: 5s}\ntarget: {url: 'sqlite:x.db', table: t, key: id}\n"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// One worker gets the 429; four more start while it waits.
	f2 := NewFetcher(ConfigOf(job), slog.New(slog.NewTextHandler(io.Discard, nil)))
	var wg gosync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = f2.Fetch(context.Background(), contract.Request{URL: srv.URL}) }()
	time.Sleep(100 * time.Millisecond) // the 429 has arrived by now
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = f2.Fetch(context.Background(), contract.Request{URL: srv.URL}) }()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(after) != 5 {
		t.Fatalf("%d successful requests, want 5", len(after))
	}
	for _, at := range after {
		if d := at.Sub(first429); d < time.Second {
			t.Errorf("a request arrived %v after the 429, before its Retry-After of 1s", d)
		}
	}
}
