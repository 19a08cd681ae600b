package auth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	gosync "sync"
	"time"

	"golang.org/x/oauth2"

	idsync "github.com/idemsync/idemsync/sync"
)

// expiryMargin: a cached token is refreshed this long before it expires.
const expiryMargin = 30 * time.Second

// tokenCache holds one bearer token for its lifetime; fetch gets a new one.
type tokenCache struct {
	mu    gosync.Mutex
	tok   *oauth2.Token
	last  string
	fetch func(ctx context.Context) (*oauth2.Token, error)
	red   *idsync.Redactor
}

// newTokenCache returns a tokenCache fetching with fetch, and tells red
// that the job fetches tokens: a position that held one is asked for
// with the token of the request's header (apply; an API that writes the
// token into its next URLs).
func newTokenCache(red *idsync.Redactor, fetch func(ctx context.Context) (*oauth2.Token, error)) *tokenCache {
	red.FetchesTokens()
	return &tokenCache{red: red, fetch: fetch}
}

func (c *tokenCache) apply(req *http.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.fresh(req.Context()); err != nil {
		return err
	}
	c.last = "Bearer " + c.tok.AccessToken
	req.Header.Set("Authorization", c.last)
	// A next URL the API wrote the token of its time into (or this
	// request's before a refresh) is sent with the token of the header.
	if s := req.URL.String(); s != "" {
		if w := c.red.WithToken(s, c.tok.AccessToken); w != s {
			u, err := url.Parse(w)
			if err != nil {
				return err
			}
			req.URL = u
		}
	}
	return nil
}

// fresh fetches a token when none is held or it is about to expire; c.mu
// is held.
func (c *tokenCache) fresh(ctx context.Context) error {
	if c.tok == nil || c.tok.AccessToken == "" || !c.tok.Expiry.IsZero() && time.Until(c.tok.Expiry) < expiryMargin {
		tok, err := c.fetch(ctx)
		if err != nil {
			return err
		}
		c.red.AddToken(tok.AccessToken)
		c.tok = tok
	}
	return nil
}

func (c *tokenCache) invalidate(stale string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok != nil && "Bearer "+c.tok.AccessToken == stale {
		c.tok = nil
	}
}

func (c *tokenCache) current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// exchangeContext gives x/oauth2 a client that sends through base (TLS
// settings of the job, no auth), bounded by ctx (the attempt's timeout).
// It follows a redirect on the token URL's own origin only: a 307 or 308
// sends the request's body again, client secret and refresh token
// included (docs/job-file.md, "What is and is not a secret").
func exchangeContext(ctx context.Context, base http.RoundTripper) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: base, CheckRedirect: tokenRedirect})
}

// tokenRedirectError is a token endpoint's redirect to another origin,
// refused before anything is sent there.
type tokenRedirectError struct{ to string }

func (e *tokenRedirectError) Error() string {
	return "token endpoint redirects to another origin, " + e.to
}

// tokenRedirect is the token client's redirect policy: the token URL's
// origin only, at most 10 redirects.
func tokenRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("token endpoint: stopped after 10 redirects")
	}
	if o := idsync.Origin(req.URL); o != idsync.Origin(via[0].URL) {
		return &tokenRedirectError{to: o}
	}
	return nil
}

// authStyle maps source.auth.auth_style to x/oauth2's.
func authStyle(s string) oauth2.AuthStyle {
	switch s {
	case "header":
		return oauth2.AuthStyleInHeader
	case "body":
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleAutoDetect
}

// classify turns a token endpoint failure into the fetcher's terms: a
// rejected client or grant is permanent (exit 1); a timeout, network error,
// 408, 429 or 5xx is returned as is and retried like any request (exit 3).
func classify(kind string, err error) error {
	var rd *tokenRedirectError
	if errors.As(err, &rd) {
		return permanent(rd.Error()+": refused (the token request carries the client secret and refresh token; nothing was sent there)",
			fmt.Sprintf("set source.auth.token_url (type %s) to the URL the token endpoint answers at", kind), nil)
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		code := re.Response.StatusCode
		if code == 408 || code == 425 || code == 429 || code >= 500 {
			return fmt.Errorf("token endpoint: HTTP %d", code)
		}
		what := re.ErrorCode
		if what == "" {
			what = fmt.Sprintf("HTTP %d", code)
		}
		return permanent(fmt.Sprintf("token endpoint refused auth %s: %s", kind, what),
			fmt.Sprintf("check source.auth (type %s): client_id, client_secret, token_url", kind), nil)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("token endpoint: %w", err)
	}
	return fmt.Errorf("token endpoint: %w", err)
}
