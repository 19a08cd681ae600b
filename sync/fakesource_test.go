package sync

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	gosync "sync"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
)

// fakeSource is an in-memory PageSource: serve answers each request with a
// JSON body (or an error), and every requested URL is recorded. It builds
// URLs as base plus params and stores next URLs unchanged: the HTTP rules
// (fixed query, secrets, origins) are source/http's and tested there.
type fakeSource struct {
	records string // the records path ("": the body is the array)
	serve   func(ctx context.Context, u *url.URL) (string, error)

	mu   gosync.Mutex
	urls []string
}

var _ contract.PageSource = (*fakeSource)(nil)

func (s *fakeSource) BuildURL(base string, params url.Values, _ bool) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("invalid URL %q", base)
	}
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func (s *fakeSource) CheckpointURL(raw string) string { return raw }

func (s *fakeSource) Fetch(ctx context.Context, req contract.Request) (*contract.Response, error) {
	rawURL := req.URL
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.urls = append(s.urls, rawURL)
	s.mu.Unlock()
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	body, err := s.serve(ctx, u)
	if err != nil {
		return nil, err
	}
	return fakeResponse(rawURL, s.records, body, nil)
}

// requests returns the URLs requested so far, in order of arrival.
func (s *fakeSource) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.urls...)
}

// fakeResponse is a 200 response with body and header, its records read at
// the plain path records and counted as they are.
func fakeResponse(rawURL, records, body string, h http.Header) (*contract.Response, error) {
	if !gjson.Valid(body) {
		return nil, fmt.Errorf("fake body is not JSON: %s", body)
	}
	v := gjson.Parse(body)
	if records != "" {
		v = v.Get(records)
	}
	var recs []gjson.Result
	switch {
	case v.IsArray():
		recs = v.Array()
	case v.Exists() && v.Type != gjson.Null:
		return nil, fmt.Errorf("records at %q are not an array in %s", records, body)
	}
	if h == nil {
		h = http.Header{}
	}
	return &contract.Response{URL: rawURL, Status: 200, Header: h, Body: []byte(body), Records: recs, Raw: len(recs), Attempts: 1}, nil
}

// lockedWriter serialises writes to a buffer shared with the engine's
// goroutines.
type lockedWriter struct {
	mu gosync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
