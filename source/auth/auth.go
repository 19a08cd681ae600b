// Package auth authenticates the requests of a job's source (source.auth,
// docs/job-file.md, "Auth"): each type is an http.RoundTripper wrapper,
// installed on the fetcher with httpsource.Fetcher.SetAuth, which only routes
// requests to the source's origin through it.
package auth

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	httpsource "github.com/idemsync/idemsync/source/http"
	idsync "github.com/idemsync/idemsync/sync"
)

// Options is what an auth chain needs beyond the spec.
type Options struct {
	Job    string       // the job file's name: keys the rotated refresh tokens
	Store  TokenStore   // state file: required by oauth2_refresh_token
	Logger *slog.Logger // nil discards
	// Keyring shares refresh tokens between the resources of a job file;
	// nil: a keyring of this job's own.
	Keyring *Keyring
}

// Install builds the auth chain of job's source.auth and installs it on f.
// A job without auth is left as is. It returns a *contract.Error (exit 1)
// when the chain cannot be built (oauth2_refresh_token without a store).
func Install(ctx context.Context, job *idsync.Job, f *httpsource.Fetcher, o Options) error {
	a := job.Source.Auth
	if a == nil {
		return nil
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	wrap, err := New(ctx, a, job.Secrets, o)
	if err != nil {
		return err
	}
	f.SetAuth(wrap)
	return nil
}

// New returns the RoundTripper wrapper of one source.auth block, built by
// its type's entry in wrappers. red receives the secrets it learns (fresh
// tokens).
func New(ctx context.Context, a *spec.Auth, red *idsync.Redactor, o Options) (func(http.RoundTripper) http.RoundTripper, error) {
	build, ok := wrappers[a.Type]
	if !ok {
		return nil, &contract.Error{Class: contract.Invalid, Msg: fmt.Sprintf("unknown auth type %q", a.Type)}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return build(ctx, a, red, o)
}

// credential is a token that can be fetched (cached) and invalidated.
type credential interface {
	// apply sets the credential on req, fetching a token when none is
	// cached or the cached one is about to expire.
	apply(req *http.Request) error
	// invalidate drops the cached token if it is still stale, so that the
	// next apply fetches a fresh one.
	invalidate(stale string)
	// current returns the header value last applied (to compare on 401).
	current() string
}

// refreshing sends a request with a credential; on a 401 it fetches a
// fresh credential once and sends the request again. A second 401 is
// returned as is (a permanent failure naming the auth type).
type refreshing struct {
	base http.RoundTripper
	src  credential
	kind string
}

func (t *refreshing) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if err := t.src.apply(r); err != nil {
		return nil, err
	}
	used := t.src.current()
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil // the body cannot be sent twice
	}
	resp.Body.Close()
	t.src.invalidate(used)
	r = req.Clone(req.Context())
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		b, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = b
	}
	if err := t.src.apply(r); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(r)
}

// permanent returns an error that the fetcher does not retry (exit 1).
func permanent(msg, hint string, err error) error {
	return &contract.Error{Class: contract.Permanent, Msg: msg, Hint: hint, Err: err}
}
