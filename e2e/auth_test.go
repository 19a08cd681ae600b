package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-oauth2/oauth2/v4"
	"github.com/go-oauth2/oauth2/v4/manage"
	"github.com/go-oauth2/oauth2/v4/models"
	"github.com/go-oauth2/oauth2/v4/server"
	"github.com/go-oauth2/oauth2/v4/store"
)

// authOAuth is a real OAuth2 authorization server (go-oauth2) in httptest,
// plus a paged API that accepts only the tokens it issued.
type authOAuth struct {
	mgr      *manage.Manager
	clients  *store.ClientStore
	srv      *server.Server
	tokenURL string
	apiURL   string
	tokens   atomic.Int64 // token requests
	fail5xx  atomic.Bool
	api401   atomic.Int64 // API answers with 401
	// revokeAt, when > 0, makes the API revoke the presented access token
	// once, when that page is requested (the next request must refresh).
	revokeAt atomic.Int64
	// deny makes the API refuse every token.
	deny atomic.Bool
}

const authClientID, authClientSecret = "client-1", "secret-canary-cs-9f3a"

func authNewOAuth(t *testing.T, exp time.Duration, pageDelay time.Duration) *authOAuth {
	t.Helper()
	o := &authOAuth{mgr: manage.NewDefaultManager(), clients: store.NewClientStore()}
	o.mgr.MustTokenStorage(store.NewMemoryTokenStore())
	o.mgr.MapClientStorage(o.clients)
	_ = o.clients.Set(authClientID, &models.Client{ID: authClientID, Secret: authClientSecret, Domain: "http://localhost"})
	o.mgr.SetClientTokenCfg(&manage.Config{AccessTokenExp: exp})
	o.mgr.SetPasswordTokenCfg(&manage.Config{AccessTokenExp: exp, RefreshTokenExp: time.Hour, IsGenerateRefresh: true})
	o.mgr.SetRefreshTokenCfg(&manage.RefreshingConfig{AccessTokenExp: exp, RefreshTokenExp: time.Hour,
		IsGenerateRefresh: true, IsRemoveAccess: true, IsRemoveRefreshing: true}) // single-use refresh tokens
	o.srv = server.NewDefaultServer(o.mgr)
	o.srv.SetAllowedGrantType(oauth2.ClientCredentials, oauth2.Refreshing)
	o.srv.SetClientInfoHandler(func(r *http.Request) (string, string, error) {
		if id, secret, err := server.ClientBasicHandler(r); err == nil {
			return id, secret, nil
		}
		return server.ClientFormHandler(r)
	})
	o.tokenURL = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.tokens.Add(1)
		if o.fail5xx.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = o.srv.HandleTokenRequest(w, r)
	})) + "/token"
	o.apiURL = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := o.revokeAt.Load(); p > 0 && r.URL.Query().Get("page") == strconv.FormatInt(p, 10) && o.revokeAt.CompareAndSwap(p, 0) {
			_ = o.mgr.RemoveAccessToken(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		}
		if _, err := o.srv.ValidationBearerToken(r); err != nil || o.deny.Load() {
			o.api401.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":"invalid token %s"}`, strings.ReplaceAll(r.Header.Get("Authorization"), "-", `\u002d`))
			return
		}
		time.Sleep(pageDelay)
		authPage(w, r)
	}))
	return o
}

// authPage serves pages 1..3 of two records each, then an empty page.
func authPage(w http.ResponseWriter, r *http.Request) {
	p, _ := strconv.Atoi(r.URL.Query().Get("page"))
	w.Header().Set("Content-Type", "application/json")
	if p < 1 || p > 3 {
		fmt.Fprint(w, `{"data":[]}`)
		return
	}
	fmt.Fprintf(w, `{"data":[{"id":%d,"name":"n%d"},{"id":%d,"name":"n%d"}]}`, 2*p-1, 2*p-1, 2*p, 2*p)
}

// seedRefresh issues a refresh token the way a user's authorization would.
func (o *authOAuth) seedRefresh(t *testing.T) string {
	t.Helper()
	ti, err := o.mgr.GenerateAccessToken(context.Background(), oauth2.PasswordCredentials, &oauth2.TokenGenerateRequest{
		ClientID: authClientID, ClientSecret: authClientSecret, UserID: "user-1"})
	if err != nil {
		t.Fatal(err)
	}
	return ti.GetRefresh()
}

// authJob is a paged job against url with the given auth block (indented
// under source.auth).
func authJob(url, auth string) string {
	return fmt.Sprintf(`name: authjob
source:
  url: %s
  records: data
  auth:
%s
pagination: {style: page}
retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url, auth)
}

func authRows(t *testing.T, dir string) int {
	t.Helper()
	db := openSQLite(t, filepath.Join(dir, "out.db"))
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM items`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func authScanAll(t *testing.T, dir string, scan *canaryScan, rs ...result) {
	t.Helper()
	for i, r := range rs {
		scan.result(t, fmt.Sprintf("invocation %d", i), r)
	}
	st := idemsync(t, dir, nil, "status", "job.yaml")
	scan.result(t, "status", st)
	stj := idemsync(t, dir, nil, "status", "job.yaml", "--json")
	scan.result(t, "status --json", stj)
	scan.stateFiles(t, filepath.Join(dir, ".idemsync", "state.db"))
}

func TestAuthClientCredentials(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authJob(o.apiURL, fmt.Sprintf(`    type: oauth2_client_credentials
    token_url: %s
    client_id: %s
    client_secret: "${CS}"
    auth_style: header`, o.tokenURL, authClientID)))
	env := []string{"CS=" + authClientSecret}
	r := idemsync(t, dir, env, "run", "job.yaml", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if n := authRows(t, dir); n != 6 {
		t.Errorf("%d rows, want 6", n)
	}
	if n := o.tokens.Load(); n != 1 {
		t.Errorf("%d token requests for 4 pages, want 1 (cached for its lifetime)", n)
	}
	authScanAll(t, dir, &canaryScan{canaries: []string{authClientSecret}}, r)
}

// A token that expires mid-run (1s lifetime, slow pages) is refreshed
// before expiry; a token the API revokes gives a 401, one refresh, a retry.
func TestAuthClientCredentialsExpiryMidRun(t *testing.T) {
	o := authNewOAuth(t, time.Second, 600*time.Millisecond)
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authJob(o.apiURL, fmt.Sprintf(`    type: oauth2_client_credentials
    token_url: %s
    client_id: %s
    client_secret: %s
    auth_style: body`, o.tokenURL, authClientID, authClientSecret)))
	r := idemsync(t, dir, nil, "run", "job.yaml", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if n := o.tokens.Load(); n < 2 {
		t.Errorf("%d token requests over a run longer than the token's life, want at least 2", n)
	}
	if n := authRows(t, dir); n != 6 {
		t.Errorf("%d rows, want 6", n)
	}
}

func TestAuthRevokedClientIsPermanent(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	_ = o.clients.Set(authClientID, &models.Client{ID: authClientID, Secret: "rotated-elsewhere", Domain: "http://localhost"})
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authJob(o.apiURL, fmt.Sprintf(`    type: oauth2_client_credentials
    token_url: %s
    client_id: %s
    client_secret: %s`, o.tokenURL, authClientID, authClientSecret)))
	r := idemsync(t, dir, nil, "run", "job.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "invalid_client") || !strings.Contains(r.stderr, "oauth2_client_credentials") {
		t.Errorf("exit %d, want 1 naming invalid_client and the auth type:\n%s", r.code, r.stderr)
	}
	v := idemsync(t, dir, nil, "validate", "job.yaml", "--connect")
	if v.code != 1 || !strings.Contains(v.stderr, "invalid_client") {
		t.Errorf("validate --connect: exit %d, want 1 naming invalid_client:\n%s", v.code, v.stderr)
	}
	authScanAll(t, dir, &canaryScan{canaries: []string{authClientSecret}}, r, v)
}

func TestAuthTokenEndpoint5xxIsTransient(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	o.fail5xx.Store(true)
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authJob(o.apiURL, fmt.Sprintf(`    type: oauth2_client_credentials
    token_url: %s
    client_id: %s
    client_secret: %s`, o.tokenURL, authClientID, authClientSecret)))
	r := idemsync(t, dir, nil, "run", "job.yaml")
	if r.code != 3 || !strings.Contains(r.stderr, "503") {
		t.Errorf("exit %d, want 3 naming HTTP 503:\n%s", r.code, r.stderr)
	}
	o.fail5xx.Store(false)
	if r := idemsync(t, dir, nil, "run", "job.yaml"); r.code != 0 {
		t.Errorf("after the endpoint recovered: exit %d\n%s", r.code, r.stderr)
	}
}

// Refresh tokens are single-use: each run rotates it; the rotated one is
// kept in the state file, so the next run succeeds; a changed seed wins.
func TestAuthRefreshTokenRotation(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	seed := o.seedRefresh(t)
	dir := t.TempDir()
	job := func(rt string) string {
		return authJob(o.apiURL, fmt.Sprintf(`    type: oauth2_refresh_token
    token_url: %s
    client_id: %s
    client_secret: %s
    refresh_token: "${RT}"`, o.tokenURL, authClientID, authClientSecret))
	}
	writeJob(t, dir, "job.yaml", job(seed))
	var rs []result
	for i := 0; i < 3; i++ {
		r := idemsync(t, dir, []string{"RT=" + seed}, "run", "job.yaml")
		rs = append(rs, r)
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	if n := o.tokens.Load(); n != 3 {
		t.Errorf("%d token requests for 3 runs, want 3", n)
	}
	authScanAll(t, dir, &canaryScan{canaries: []string{authClientSecret, seed}}, rs...)
	// The rotated token is in the state file, and printed nowhere.
	var stored string
	if err := openSQLite(t, filepath.Join(dir, ".idemsync", "state.db")).QueryRow(`SELECT token FROM auth_credentials`).Scan(&stored); err != nil || stored == "" || stored == seed {
		t.Fatalf("stored refresh token %q, %v: want the rotated one", stored, err)
	}
	outScan := &canaryScan{canaries: []string{stored}}
	for i, r := range append(rs, idemsync(t, dir, nil, "status", "job.yaml"), idemsync(t, dir, nil, "status", "--json")) {
		outScan.result(t, fmt.Sprintf("output %d", i), r)
	}
	// A new seed (the old one is spent) replaces the stored token.
	seed2 := o.seedRefresh(t)
	if r := idemsync(t, dir, []string{"RT=" + seed2}, "run", "job.yaml"); r.code != 0 {
		t.Errorf("new seed: exit %d\n%s", r.code, r.stderr)
	}
}

// A refresh token the provider no longer accepts ends with exit 1 and a
// hint saying how to re-seed, never a loop of 401s.
func TestAuthRefreshTokenRevoked(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authJob(o.apiURL, fmt.Sprintf(`    type: oauth2_refresh_token
    token_url: %s
    client_id: %s
    client_secret: %s
    refresh_token: not-a-valid-refresh-token`, o.tokenURL, authClientID, authClientSecret)))
	r := idemsync(t, dir, nil, "run", "job.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "invalid_grant") || !strings.Contains(r.stderr, "source.auth.refresh_token") {
		t.Errorf("exit %d, want 1 with a re-seed hint:\n%s", r.code, r.stderr)
	}
	if o.api401.Load() != 0 {
		t.Errorf("the API saw %d unauthenticated requests", o.api401.Load())
	}
}

// command auth: the output is the token, reused for ttl, run again on 401.
func TestAuthCommand(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	script := filepath.Join(dir, "token.sh")
	const tok = "cmd-canary-token-77ab"
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho x >> "+count+"\necho secret-stderr-canary-1 >&2\necho "+tok+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	var rejected atomic.Bool
	api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != "Token "+tok || r.URL.Query().Get("page") == "2" && !rejected.Swap(true) {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		authPage(w, r)
	}))
	writeJob(t, dir, "job.yaml", authJob(api, fmt.Sprintf(`    type: command
    run: [%s]
    header: X-Token
    prefix: "Token "
    ttl: 1h`, script)))
	r := idemsync(t, dir, nil, "run", "job.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	data, _ := os.ReadFile(count)
	if n := strings.Count(string(data), "x"); n != 2 {
		t.Errorf("command ran %d times, want 2 (once, then once after the 401)", n)
	}
	authScanAll(t, dir, &canaryScan{canaries: []string{tok, "secret-stderr-canary-1"}}, r)

	// A failing command: exit 1, its exit code named, its stderr not shown.
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho secret-stderr-canary-1 >&2\nexit 7\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	r = idemsync(t, dir, nil, "run", "job.yaml", "--restart")
	if r.code != 1 || !strings.Contains(r.stderr, "failed with exit 7") || strings.Contains(r.stderr, "secret-stderr-canary-1") {
		t.Errorf("failing command: exit %d\n%s", r.code, r.stderr)
	}
}

// api_key (header and query) and basic reach the API; their secrets appear
// nowhere.
func TestAuthStaticTypes(t *testing.T) {
	const key, pw = "apikey-canary-5e1d", "basic-canary-pw-3c"
	for _, tc := range []struct{ name, auth string }{
		{"api_key header", "    type: api_key\n    name: X-Api-Key\n    value: " + key},
		{"api_key query", "    type: api_key\n    name: api_key\n    value: " + key + "\n    in: query"},
		{"basic", "    type: basic\n    username: alice\n    password: " + pw},
		{"bearer", "    type: bearer\n    token: " + key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u, p, _ := r.BasicAuth()
				if r.Header.Get("X-Api-Key") != key && r.URL.Query().Get("api_key") != key && !(u == "alice" && p == pw) &&
					r.Header.Get("Authorization") != "Bearer "+key {
					http.Error(w, `{"error":"no credentials"}`, http.StatusUnauthorized)
					return
				}
				authPage(w, r)
			}))
			dir := t.TempDir()
			writeJob(t, dir, "job.yaml", authJob(api, tc.auth))
			r := idemsync(t, dir, nil, "run", "job.yaml", "--log-level", "debug")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			authScanAll(t, dir, &canaryScan{canaries: []string{key, pw, "YWxpY2U6YmFzaWMtY2FuYXJ5LXB3LTNj"}}, r)
		})
	}
}

var _ = httptest.NewServer
