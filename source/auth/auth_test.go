package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	oauth "github.com/go-oauth2/oauth2/v4"
	"github.com/go-oauth2/oauth2/v4/manage"
	"github.com/go-oauth2/oauth2/v4/models"
	"github.com/go-oauth2/oauth2/v4/server"
	"github.com/go-oauth2/oauth2/v4/store"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
)

const clientID, clientSecret = "client-1", "secret-1"

// provider is a real OAuth2 authorization server (go-oauth2) in httptest
// and an API that accepts only the access tokens it issued.
type provider struct {
	mgr      *manage.Manager
	srv      *server.Server
	tokenURL string
	api      *httptest.Server
	tokens   atomic.Int64 // token requests
	basic    atomic.Int64 // token requests authenticated with HTTP Basic
	down     atomic.Bool  // token endpoint answers 503
	slow     atomic.Bool  // token endpoint answers after 2 s
	mu       gosync.Mutex
	events   []string // "token", "api <access token>" in order
	bodies   []string // request bodies the API received
}

func newProvider(t *testing.T, exp time.Duration) *provider {
	t.Helper()
	p := &provider{mgr: manage.NewDefaultManager()}
	p.mgr.MustTokenStorage(store.NewMemoryTokenStore())
	clients := store.NewClientStore()
	_ = clients.Set(clientID, &models.Client{ID: clientID, Secret: clientSecret, Domain: "http://localhost"})
	p.mgr.MapClientStorage(clients)
	p.mgr.SetClientTokenCfg(&manage.Config{AccessTokenExp: exp})
	p.mgr.SetPasswordTokenCfg(&manage.Config{AccessTokenExp: exp, RefreshTokenExp: time.Hour, IsGenerateRefresh: true})
	p.mgr.SetRefreshTokenCfg(&manage.RefreshingConfig{AccessTokenExp: exp, IsGenerateRefresh: true, IsRemoveAccess: true, IsRemoveRefreshing: true})
	p.srv = server.NewDefaultServer(p.mgr)
	p.srv.SetAllowGetAccessRequest(false)
	p.srv.SetClientInfoHandler(func(r *http.Request) (string, string, error) {
		if id, secret, err := server.ClientBasicHandler(r); err == nil {
			p.basic.Add(1)
			return id, secret, nil
		}
		return server.ClientFormHandler(r)
	})
	tok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.tokens.Add(1)
		p.event("token")
		if p.slow.Load() {
			time.Sleep(2 * time.Second)
		}
		if p.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = p.srv.HandleTokenRequest(w, r)
	}))
	t.Cleanup(tok.Close)
	p.tokenURL = tok.URL + "/token"
	p.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.bodies = append(p.bodies, string(b))
		p.mu.Unlock()
		p.event("api " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if _, err := p.srv.ValidationBearerToken(r); err != nil {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"data":[]}`)
	}))
	t.Cleanup(p.api.Close)
	return p
}

func (p *provider) event(e string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, e)
}

// seed issues a refresh token the way a user's authorization would.
func (p *provider) seed(t *testing.T) string {
	t.Helper()
	ti, err := p.mgr.GenerateAccessToken(context.Background(), oauth.PasswordCredentials, &oauth.TokenGenerateRequest{
		ClientID: clientID, ClientSecret: clientSecret, UserID: "user-1"})
	if err != nil {
		t.Fatal(err)
	}
	return ti.GetRefresh()
}

// client is an HTTP client whose requests go through a's auth chain.
func client(t *testing.T, a *spec.Auth, o Options) (*http.Client, *idsync.Redactor) {
	t.Helper()
	red := idsync.NewRedactor()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	wrap, err := New(context.Background(), a, red, o)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: wrap(http.DefaultTransport)}, red
}

func get(t *testing.T, c *http.Client, url string) (int, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func clientCredentials(p *provider, style string) *spec.Auth {
	return &spec.Auth{Type: idsync.AuthClientCredentials, TokenURL: p.tokenURL, ClientID: clientID, ClientSecret: clientSecret, AuthStyle: style}
}

// A client credentials token is fetched once and reused for its lifetime;
// one that is about to expire (within the 30 s margin) is fetched again
// before it is sent.
func TestClientCredentialsCachedForLifetime(t *testing.T) {
	p := newProvider(t, time.Hour)
	c, red := client(t, clientCredentials(p, ""), Options{})
	for range 5 {
		if code, err := get(t, c, p.api.URL); err != nil || code != 200 {
			t.Fatalf("GET: %d %v", code, err)
		}
	}
	if n := p.tokens.Load(); n != 1 {
		t.Errorf("%d token requests for 5 API requests with a 1h token, want 1", n)
	}
	if !strings.Contains(red.Redact(p.events[len(p.events)-1]), idsync.Redacted) {
		t.Errorf("the access token was not registered as a secret")
	}

	short := newProvider(t, expiryMargin+time.Second)
	c, _ = client(t, clientCredentials(short, ""), Options{})
	if code, err := get(t, c, short.api.URL); err != nil || code != 200 {
		t.Fatalf("GET: %d %v", code, err)
	}
	time.Sleep(1100 * time.Millisecond) // the token now expires within the margin
	if code, err := get(t, c, short.api.URL); err != nil || code != 200 {
		t.Fatalf("GET: %d %v", code, err)
	}
	if n := short.tokens.Load(); n != 2 {
		t.Errorf("%d token requests, want 2: a token about to expire is fetched again before use", n)
	}
}

// auth_style says where the client's credentials go: HTTP Basic (header)
// or form fields (body).
func TestClientCredentialsAuthStyle(t *testing.T) {
	for _, tc := range []struct {
		style string
		basic int64
	}{{"header", 1}, {"body", 0}} {
		p := newProvider(t, time.Hour)
		c, _ := client(t, clientCredentials(p, tc.style), Options{})
		if code, err := get(t, c, p.api.URL); err != nil || code != 200 {
			t.Fatalf("%s: GET: %d %v", tc.style, code, err)
		}
		if got := p.basic.Load(); got != tc.basic {
			t.Errorf("auth_style %s: %d token requests with HTTP Basic, want %d", tc.style, got, tc.basic)
		}
	}
}

// A 401 drops the token, fetches a fresh one once and sends the request
// again, body included; a second 401 is returned as is.
func TestUnauthorizedRefreshesOnce(t *testing.T) {
	p := newProvider(t, time.Hour)
	c, _ := client(t, clientCredentials(p, ""), Options{})
	if code, err := get(t, c, p.api.URL); err != nil || code != 200 {
		t.Fatalf("GET: %d %v", code, err)
	}
	// Revoke the cached token: the next request gets a 401 and retries.
	last := strings.TrimPrefix(p.events[len(p.events)-1], "api ")
	if err := p.mgr.RemoveAccessToken(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, p.api.URL, bytes.NewReader([]byte(`{"q":"page 2"}`)))
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST after revocation: %v %v, want 200 after one refresh", resp, err)
	}
	resp.Body.Close()
	if n := p.tokens.Load(); n != 2 {
		t.Errorf("%d token requests, want 2", n)
	}
	if b := p.bodies[len(p.bodies)-2:]; b[0] != `{"q":"page 2"}` || b[1] != b[0] {
		t.Errorf("bodies of the refused and the retried request: %q, want the body sent twice", b)
	}

	// An API that refuses every token: one refresh, then the 401 stands.
	deny := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusUnauthorized) }))
	defer deny.Close()
	before := p.tokens.Load()
	if code, err := get(t, c, deny.URL); err != nil || code != 401 {
		t.Errorf("always 401: %d %v, want the 401 returned", code, err)
	}
	if n := p.tokens.Load() - before; n != 1 {
		t.Errorf("always 401: %d token requests, want exactly 1 refresh", n)
	}
}

// Token endpoint faults are classified like requests: 5xx and timeouts are
// transient (retried, exit 3); a refused client is permanent (exit 1) and
// names the auth type.
func TestTokenEndpointFaults(t *testing.T) {
	p := newProvider(t, time.Hour)
	p.down.Store(true)
	c, _ := client(t, clientCredentials(p, ""), Options{})
	_, err := get(t, c, p.api.URL)
	var ie *contract.Error
	if err == nil || errors.As(err, &ie) && ie.Class == contract.Permanent || !strings.Contains(err.Error(), "503") {
		t.Errorf("token endpoint 503: %v, want a transient error naming HTTP 503", err)
	}

	p.down.Store(false)
	p.slow.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.api.URL, nil)
	_, err = c.Do(req)
	if err == nil || errors.As(err, &ie) && ie.Class == contract.Permanent {
		t.Errorf("token endpoint timeout: %v, want a transient error", err)
	}
	p.slow.Store(false)

	bad := clientCredentials(p, "")
	bad.ClientSecret = "wrong-secret-canary"
	c, _ = client(t, bad, Options{})
	_, err = get(t, c, p.api.URL)
	if !errors.As(err, &ie) || ie.Class != contract.Permanent || !strings.Contains(ie.Error(), "invalid_client") ||
		!strings.Contains(ie.Hint, idsync.AuthClientCredentials) || strings.Contains(ie.Error()+ie.Hint, "wrong-secret-canary") {
		t.Errorf("refused client: %v (hint %q), want exit 1 naming invalid_client and the auth type, without the secret", err, hintOf(err))
	}
}

func hintOf(err error) string {
	var ie *contract.Error
	if errors.As(err, &ie) {
		return ie.Hint
	}
	return ""
}

// memStore is a TokenStore in memory that logs its writes among the
// provider's events; seed, tok and pending are those of the last write.
type memStore struct {
	p         *provider
	seed, tok string
	pending   bool
	saves     int
	byCred    map[string][3]string // credential → seed hash, token, pending
	mu        gosync.Mutex
}

func (m *memStore) LoadRefreshToken(_ context.Context, _, cred, _ string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.byCred[cred]
	return e[1], e[2] == "true", nil
}

func (m *memStore) SaveRefreshToken(_ context.Context, _, cred, seed, tok string, pending bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byCred == nil {
		m.byCred = map[string][3]string{}
	}
	m.byCred[cred] = [3]string{seed, tok, fmt.Sprint(pending)}
	m.seed, m.tok, m.pending = seed, tok, pending
	m.saves++
	m.p.event(fmt.Sprintf("save %s pending=%v", tok, pending))
	return nil
}

func (m *memStore) DropRefreshTokens(context.Context, string, []string, []string) (int, error) {
	return 0, nil
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func refreshAuth(p *provider, seed string) *spec.Auth {
	return &spec.Auth{Type: idsync.AuthRefreshToken, TokenURL: p.tokenURL, ClientID: clientID, ClientSecret: clientSecret, RefreshToken: seed}
}

// A rotated refresh token is stored (and the exchange marked sent before
// it) before the new access token is used; the next exchange spends the
// stored token, not the seed; a changed seed replaces the stored token.
func TestRefreshTokenRotationStoredBeforeUse(t *testing.T) {
	p := newProvider(t, time.Hour)
	seed := p.seed(t)
	st := &memStore{p: p}
	c, red := client(t, refreshAuth(p, seed), Options{Job: "j", Store: st})
	if code, err := get(t, c, p.api.URL); err != nil || code != 200 {
		t.Fatalf("GET: %d %v", code, err)
	}
	rotated := st.tok
	if rotated == "" || rotated == seed || st.pending || st.seed != hash(seed) {
		t.Fatalf("store after the exchange: %+v, want the rotated token, not pending, under the seed's hash", st)
	}
	want := []string{"save " + seed + " pending=true", "token", "save " + rotated + " pending=false"}
	if len(p.events) < 4 || !equal(p.events[:3], want) || !strings.HasPrefix(p.events[3], "api ") {
		t.Fatalf("events %q, want %q then the API request", p.events, want)
	}
	if red.Redact(rotated) != idsync.Redacted {
		t.Errorf("the rotated refresh token is not a secret")
	}

	// A second client (the next run) starts from the store: it spends the
	// rotated token; the seed, spent, would be refused.
	c2, _ := client(t, refreshAuth(p, seed), Options{Job: "j", Store: st})
	if code, err := get(t, c2, p.api.URL); err != nil || code != 200 {
		t.Fatalf("next run: %d %v, want the stored token to work", code, err)
	}
	if st.tok == rotated {
		t.Errorf("the stored token did not rotate again")
	}

	// A new seed in the spec wins over the stored token.
	seed2 := p.seed(t)
	c3, _ := client(t, refreshAuth(p, seed2), Options{Job: "j", Store: st})
	if code, err := get(t, c3, p.api.URL); err != nil || code != 200 || st.seed != hash(seed2) {
		t.Fatalf("new seed: %d %v, store seed %s, want the new seed used and stored", code, err, st.seed)
	}
}

// A run that stopped inside an exchange (marked sent, answer never stored)
// whose token the provider then refuses ends in a permanent error saying
// how to re-seed, with one token request, never a loop of 401s.
func TestRefreshTokenLostInExchange(t *testing.T) {
	p := newProvider(t, time.Hour)
	seed := p.seed(t)
	// Spend the seed, as the killed run's exchange did.
	st := &memStore{p: p}
	c, _ := client(t, refreshAuth(p, seed), Options{Job: "j", Store: st})
	if code, err := get(t, c, p.api.URL); err != nil || code != 200 {
		t.Fatalf("GET: %d %v", code, err)
	}
	a := refreshAuth(p, seed)
	lost := &memStore{p: p, byCred: map[string][3]string{CredentialID(a): {hash(seed), seed, "true"}}}
	before := p.tokens.Load()
	a.AuthStyle = "body" // without it x/oauth2 tries header, then body: two requests
	c, _ = client(t, a, Options{Job: "j", Store: lost})
	_, err := get(t, c, p.api.URL)
	var ie *contract.Error
	if !errors.As(err, &ie) || ie.Class != contract.Permanent || !strings.Contains(ie.Msg, "stopped during a refresh token exchange") ||
		!strings.Contains(ie.Hint, "source.auth.refresh_token") || strings.Contains(ie.Error()+ie.Hint, seed) {
		t.Fatalf("lost rotation: %v (hint %q), want exit 1 with a re-seed hint and no token", err, hintOf(err))
	}
	if n := p.tokens.Load() - before; n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
	if _, err := get(t, c, p.api.URL); err == nil {
		t.Errorf("a second request after the refusal succeeded")
	}
	if n := p.tokens.Load() - before; n != 2 {
		t.Errorf("%d token requests after two API requests, want one each, no loop", n)
	}
}

// command runs its argv without a shell, keeps the output for ttl, runs
// again on a 401, and its standard error never reaches the error.
func TestCommandNoShellTTL(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	script := filepath.Join(dir, "tok.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho x >> "+count+"\necho stderr-canary >&2\necho \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	var seen atomic.Value
	refuse := atomic.Int64{}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("X-Token"))
		if refuse.Add(-1) >= 0 {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "{}")
	}))
	defer api.Close()
	prefix := "Token "
	a := &spec.Auth{Type: idsync.AuthCommand, Run: []string{script, "$HOME;literal"}, Header: "X-Token", Prefix: &prefix, TTL: spec.Duration{Duration: time.Hour}}
	c, _ := client(t, a, Options{})
	for range 3 {
		if code, err := get(t, c, api.URL); err != nil || code != 200 {
			t.Fatalf("GET: %d %v", code, err)
		}
	}
	if got := seen.Load(); got != "Token $HOME;literal" {
		t.Errorf("header %q, want the argument passed as is (no shell)", got)
	}
	runs := func() int { b, _ := os.ReadFile(count); return strings.Count(string(b), "x") }
	if n := runs(); n != 1 {
		t.Errorf("command ran %d times for 3 requests within ttl, want 1", n)
	}
	refuse.Store(1)
	if code, err := get(t, c, api.URL); err != nil || code != 200 {
		t.Fatalf("GET after a 401: %d %v", code, err)
	}
	if n := runs(); n != 2 {
		t.Errorf("command ran %d times, want 2 (again after the 401)", n)
	}

	if err := os.WriteFile(script, []byte("#!/bin/sh\necho stderr-canary >&2\nexit 3\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	a.TTL.Duration = 0
	c, _ = client(t, a, Options{})
	_, err := get(t, c, api.URL)
	var ie *contract.Error
	if !errors.As(err, &ie) || ie.Class != contract.Permanent || !strings.Contains(ie.Msg, "failed with exit 3") || strings.Contains(err.Error()+ie.Hint, "stderr-canary") {
		t.Errorf("failing command: %v, want exit 1 naming the exit status, without its stderr", err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
