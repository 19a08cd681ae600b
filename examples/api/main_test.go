package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
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

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-records", "7", "-latency", "1ms", "-token", "T", "-mutate-every", "1"}, &stderr)
	}()
	line := regexp.MustCompile(`^example API listening on (http://127\.0\.0\.1:\d+)\n$`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; {
		if m := line.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no listening line; stderr: %q", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i, want := range []int{7, 8} {
		req, _ := http.NewRequest(http.MethodGet, base+"/offset", nil)
		req.Header.Set("Authorization", "Bearer T")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Total int }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || body.Total != want {
			t.Fatalf("request %d: total %d (%v), want %d", i+1, body.Total, err, want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancellation")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-records", "-1"}, {"-page-size", "0"}, {"-fault-rate", "2"},
		{"-fault-kinds", "500,teapot"}, {"extra"}, {"-nope"},
	} {
		var stderr syncBuffer
		if err := run(context.Background(), append([]string{"-addr", "127.0.0.1:0"}, args...), &stderr); err == nil {
			t.Errorf("%v accepted", args)
		}
		if strings.Contains(stderr.String(), "listening") {
			t.Errorf("%v: started listening", args)
		}
	}
}

func TestRunServesTheShop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-records", "5", "-shop", "shop"}, &stderr) }()
	line := regexp.MustCompile(`^example API listening on (http://127\.0\.0\.1:\d+)\n$`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; {
		if m := line.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no listening line; stderr: %q", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for path, want := range map[string]int{"/orders": 5, "/orders/2/items": 12, "/customers": 10} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Meta struct{ Total int }
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || body.Meta.Total != want {
			t.Errorf("%s: total %d (%v), want %d", path, body.Meta.Total, err, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-shop", "gitlab"}, &stderr); err == nil {
		t.Error("-shop gitlab accepted")
	}
}
