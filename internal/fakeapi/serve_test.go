package fakeapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Start(ctx, "127.0.0.1:0", Options{Records: 12, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %q", s.URL)
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/all", nil)
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /all: %v %v", resp, err)
	}
	resp.Body.Close()
	if s.API.Requests("/all") != 1 || len(s.API.Records()) != 12 {
		t.Fatal("API not the one served")
	}
	cancel()
	done := make(chan error)
	go func() { done <- s.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop after its context was cancelled")
	}
	if _, err := http.Get(s.URL + "/all"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

func TestServeAndClose(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u, err := Serve(ctx, "127.0.0.1:0", Options{Records: 2})
	if err != nil {
		t.Fatal(err)
	}
	var data []Record
	getJSON(t, u+"/all", &data)
	if len(data) != 2 {
		t.Fatalf("%d records", len(data))
	}
	if _, err := Start(ctx, "127.0.0.1:0", Options{Faults: Faults{Rate: 2}}); err == nil {
		t.Fatal("Start accepted an invalid fault rate")
	}
	s, err := Start(ctx, "0.0.0.0:0", Options{Records: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("unspecified host reported as %q", s.URL)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
