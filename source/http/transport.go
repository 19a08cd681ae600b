package httpsource

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/urlquery"
)

// timedRoundTrip sends req through base with the per-attempt timeout
// applied from now on: the rate limiter's and a 429 pause's waits come
// before, so they never consume it. The timeout covers the body read; it
// is released when the body is closed.
func timedRoundTrip(base http.RoundTripper, req *http.Request, timeout time.Duration) (*http.Response, error) {
	if timeout <= 0 {
		return base.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	resp, err := base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody releases an attempt's timeout when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// SetAuth installs the job's authentication: wrap receives the transport
// that sends a request and returns the one that authenticates it first
// (source/auth builds it; cmd/ installs it). Only requests to the source's
// origin go through it; others are sent without credentials. Call it
// before the first Fetch.
func (f *Fetcher) SetAuth(wrap func(http.RoundTripper) http.RoundTripper) {
	if wrap == nil {
		f.authed = nil
		return
	}
	f.authed = wrap(f.plain)
}

// originTransport sends requests to the source's origin through the auth
// chain and every other request without it, never with a body that holds
// a secret (source.body's ${VAR}s: refused), and without the query
// parameters that hold a secret (an API echoes the request's query, API
// key included, into a redirect's Location or a next link) or a Referer
// (Go sets one on a redirect: the previous URL, query and all).
type originTransport struct{ f *Fetcher }

func (t *originTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.f.sameOrigin(req.URL.String()) {
		if t.f.authed != nil {
			return t.f.authed.RoundTrip(req)
		}
		return t.f.plain.RoundTrip(req)
	}
	if t.f.bodyHoldsSecret(req) {
		o := t.f.redact(origin(req.URL))
		return nil, &contract.Error{Class: contract.Permanent,
			Msg:  fmt.Sprintf("the request body holds a secret of the job (a ${VAR} in source.body) and would go to another origin, %s: refused", o),
			Hint: fmt.Sprintf("nothing was sent to %s: a body is sent as it is, so a request whose body holds a secret goes to the source's own origin only (a next page or redirect there is refused, even in source.follow_origins)", o)}
	}
	q := urlquery.Parse(req.URL.RawQuery)
	if t.f.dropSecretParams(q) || req.Header.Get("Referer") != "" {
		r := req.Clone(req.Context())
		u := *r.URL
		u.RawQuery = q.String()
		r.URL = &u
		r.Header.Del("Referer")
		req = r
	}
	return t.f.plain.RoundTrip(req)
}

// bodyHoldsSecret reports whether req's body holds a secret of the job.
// A body it cannot read again is taken to hold one when source.body does.
func (f *Fetcher) bodyHoldsSecret(req *http.Request) bool {
	if req.Body == nil || req.Body == http.NoBody {
		return false
	}
	if req.GetBody == nil {
		b := string(f.cfg.Source.Body)
		return f.redact(b) != b
	}
	rc, err := req.GetBody()
	if err != nil {
		return true
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return err != nil || f.redact(string(b)) != string(b)
}
