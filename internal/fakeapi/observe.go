package fakeapi

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"sync"
)

// maxRecordedBody caps how much of a request body LastBody keeps.
const maxRecordedBody = 1 << 20

// observer counts and records what the API received and injected.
type observer struct {
	mu       sync.Mutex
	requests map[string]int
	faults   map[string]int
	lastHdr  http.Header
	lastBody []byte
	seen     map[string]bool // canonical header names seen with a value

	listOK   int
	mutateN  int
	mutateFn func(*API)
}

func (o *observer) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = map[string]int{}
	o.faults = map[string]int{}
	o.seen = map[string]bool{}
	o.lastHdr, o.lastBody = nil, nil
	o.listOK = 0
}

// request records r, reading (and restoring) up to maxRecordedBody of its body.
func (o *observer) request(r *http.Request) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		body, _ = io.ReadAll(io.LimitReader(r.Body, maxRecordedBody))
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests[r.URL.Path]++
	o.lastHdr = r.Header.Clone()
	o.lastBody = body
	for name, vals := range r.Header {
		for _, v := range vals {
			if v != "" {
				o.seen[name] = true
			}
		}
	}
}

func (o *observer) fault(kind string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.faults[kind]++
}

// listServed counts a successful list response and returns the mutation
// hook when this one is due.
func (o *observer) listServed() func(*API) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.listOK++
	if o.mutateN > 0 && o.mutateFn != nil && o.listOK%o.mutateN == 0 {
		return o.mutateFn
	}
	return nil
}

// Requests returns how many requests arrived for URL path (e.g. "/page"),
// including rejected and faulted ones, since New or ResetCounters.
func (a *API) Requests(path string) int {
	a.obs.mu.Lock()
	defer a.obs.mu.Unlock()
	return a.obs.requests[path]
}

// TotalRequests returns how many requests arrived on any path since New or
// ResetCounters.
func (a *API) TotalRequests() int {
	a.obs.mu.Lock()
	defer a.obs.mu.Unlock()
	n := 0
	for _, c := range a.obs.requests {
		n += c
	}
	return n
}

// FaultCounts returns how many faults of each kind were injected since New or
// ResetCounters. Kinds never injected are absent.
func (a *API) FaultCounts() map[string]int {
	a.obs.mu.Lock()
	defer a.obs.mu.Unlock()
	return maps.Clone(a.obs.faults)
}

// ResetCounters zeroes the request and fault counters, the successful list
// response count used by MutateEvery, and forgets recorded headers and
// bodies. It does not touch the data set or the fault sequence.
func (a *API) ResetCounters() { a.obs.reset() }

// LastHeaders returns a copy of the headers of the most recent request on
// any path, or nil when none arrived since New or ResetCounters.
func (a *API) LastHeaders() http.Header {
	a.obs.mu.Lock()
	defer a.obs.mu.Unlock()
	return a.obs.lastHdr.Clone()
}

// LastBody returns the body (at most 1 MiB) of the most recent request, or
// nil when it had none.
func (a *API) LastBody() []byte {
	a.obs.mu.Lock()
	defer a.obs.mu.Unlock()
	return bytes.Clone(a.obs.lastBody)
}

// SeenHeader reports whether any request since New or ResetCounters carried
// header name with a non-empty value (e.g. "Authorization" reaching the
// target of a cross-origin redirect).
func (a *API) SeenHeader(name string) bool {
	a.obs.mu.Lock()
	defer a.obs.mu.Unlock()
	return a.obs.seen[http.CanonicalHeaderKey(name)]
}

// MutateEvery makes the API call fn after every n-th successful list
// response (2xx, not faulted) since New or ResetCounters, so a sync in
// progress sees the data change at a reproducible point. fn runs in the
// serving goroutine after that page's body was built (the page does not
// include the change) and before it is sent, so a client that waits for the
// response sees the change in its next request. fn may call any API method
// but must not block on requests to this API.
// n <= 0 or a nil fn removes the hook.
func (a *API) MutateEvery(n int, fn func(a *API)) {
	a.obs.mu.Lock()
	defer a.obs.mu.Unlock()
	a.obs.mutateN, a.obs.mutateFn = n, fn
}
