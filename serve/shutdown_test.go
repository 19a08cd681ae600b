package serve

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A run requested while one is going joins nothing and starts nothing:
// 409, locked, with the job's status; a shutdown interrupts the run in
// progress, answers its request 503 with the CLI's interrupted result, and
// Serve returns once it ended.
func TestOneRunPerJobAndShutdown(t *testing.T) {
	jobs := t.TempDir()
	if err := os.WriteFile(filepath.Join(jobs, "a.yaml"), []byte("name: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &recorder{block: make(chan struct{})}
	addr := make(chan string, 1)
	s, err := New(Config{Listen: "127.0.0.1:0", Jobs: jobs, Backend: b, Ready: func(a string) { addr <- a }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	url := "http://" + <-addr
	first := make(chan [2]any, 1)
	go func() {
		code, body := call(t, "POST", url+"/jobs/a/run", "", "")
		first <- [2]any{code, body}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(b.ran()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first run never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	code, body := call(t, "POST", url+"/jobs/a.yaml/run", "", "")
	if code != http.StatusConflict || body["status"] != "locked" || body["exit_code"] != float64(4) || body["job_status"] == nil {
		t.Errorf("second run request: %d %v, want 409 locked with job_status", code, body)
	}
	if n := len(b.ran()); n != 1 {
		t.Errorf("%d runs started, want 1", n)
	}
	stop() // as SIGTERM does
	got := <-first
	if got[0] != http.StatusServiceUnavailable || got[1].(map[string]any)["status"] != "interrupted" {
		t.Errorf("the run in progress at shutdown: %v, want 503 interrupted", got)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
}
