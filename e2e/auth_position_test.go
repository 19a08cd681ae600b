package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-oauth2/oauth2/v4"
	"github.com/go-oauth2/oauth2/v4/models"
)

// authGraph is an API like Facebook's Graph API behind a real OAuth2
// server (authOAuth): every request needs a valid bearer token, and the
// next URL it gives (paging.next) carries the caller's token as
// access_token=, which it checks too: any token the server holds valid is
// taken there.
type authGraph struct {
	o     *authOAuth
	url   string
	mu    gosync.Mutex
	pages map[int]int  // requests per page
	seen  []string     // every token presented, header or URL
	bad   []string     // requests refused, and why
	stale map[int]bool // pages whose next URL gets a token the server no longer holds
}

func authNewGraph(t *testing.T, o *authOAuth) *authGraph {
	g := &authGraph{o: o, pages: map[int]int{}, stale: map[int]bool{}}
	g.url = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		bearer := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		q := r.URL.Query()
		inURL, hasURL := q.Get("access_token"), q.Has("access_token")
		g.mu.Lock()
		g.seen = append(g.seen, bearer)
		if hasURL {
			g.seen = append(g.seen, inURL)
		}
		g.mu.Unlock()
		why := ""
		if _, err := o.srv.ValidationBearerToken(r); err != nil {
			why = "header: " + err.Error()
		} else if _, err := o.mgr.LoadAccessToken(r.Context(), inURL); hasURL && err != nil {
			why = "access_token in the URL: " + err.Error()
		}
		p, _ := strconv.Atoi(q.Get("page"))
		if p == 0 {
			p = 1
		}
		if why != "" {
			g.mu.Lock()
			g.bad = append(g.bad, fmt.Sprintf("page %d: %s", p, why))
			g.mu.Unlock()
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Invalid OAuth access token","code":190}}`)
			return
		}
		g.mu.Lock()
		g.pages[p]++
		stale := g.stale[p]
		g.mu.Unlock()
		next := "null"
		if p < 4 {
			n := g.url + "/v1/items?access_token=" + url.QueryEscape(bearer) + "&page=" + strconv.Itoa(p+1)
			if par := q.Get("parent"); par != "" { // a child's pages keep their parent
				n += "&parent=" + url.QueryEscape(par)
			}
			next = strconv.Quote(n)
		}
		if stale { // the token of this page's next URL goes before it is used
			_ = o.mgr.RemoveAccessToken(r.Context(), bearer)
		}
		fmt.Fprintf(w, `{"data":[{"id":%d,"name":"n%d"},{"id":%d,"name":"n%d"}],"paging":{"next":%s}}`, 2*p-1, 2*p-1, 2*p, 2*p, next)
	}))
	return g
}

// revokeSeen removes every access token presented so far: a later process
// must use its own.
func (g *authGraph) revokeSeen(t *testing.T) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, tok := range g.seen {
		if tok != "" {
			_ = g.o.mgr.RemoveAccessToken(t.Context(), tok)
		}
	}
}

func (g *authGraph) canaries(more ...string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	set := map[string]bool{}
	out := append([]string(nil), more...)
	for _, tok := range g.seen {
		if tok != "" && !set[tok] {
			set[tok] = true
			out = append(out, tok)
		}
	}
	return out
}

func authGraphJob(api, auth string) string {
	return fmt.Sprintf(`name: graph
source:
  url: %s/v1/items
  records: data
  auth:
%s
pagination: {style: cursor, next_url: paging.next}
retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, api, auth)
}

// A job whose API writes the caller's OAuth2 access token into its next
// URLs (Facebook's Graph API paging.next): a run killed after its second
// page is continued by a new process, which fetches another token (the
// first one's are revoked in between). The continued run asks for the
// saved next URL with its own token, in the URL and in the header, reads
// every page once, ends with the table equal to the API, and no token
// ever shows in the state file, status or the logs (docs/job-file.md,
// "What is and is not a secret").
func TestAuthTokenInNextURLContinued(t *testing.T) {
	for _, kind := range []string{"oauth2_client_credentials", "oauth2_refresh_token"} {
		t.Run(kind, func(t *testing.T) {
			o := authNewOAuth(t, time.Hour, 0)
			g := authNewGraph(t, o)
			block := fmt.Sprintf("    type: %s\n    token_url: %s\n    client_id: %s\n    client_secret: \"${CS}\"", kind, o.tokenURL, authClientID)
			canaries := []string{authClientSecret}
			if kind == "oauth2_refresh_token" {
				seed := o.seedRefresh(t)
				block += "\n    refresh_token: \"${RT}\""
				canaries = append(canaries, seed)
			}
			dir := t.TempDir()
			writeJob(t, dir, "job.yaml", authGraphJob(g.url, block))
			env := []string{"CS=" + authClientSecret}
			if kind == "oauth2_refresh_token" {
				env = append(env, "RT="+canaries[1])
			}
			killed := idemsync(t, dir, append(env, "IDEMSYNC_TEST_FAILPOINT=checkpoint-committed:2"), "run", "job.yaml", "--log-level", "debug")
			if killed.code == 0 {
				t.Fatalf("the failpoint did not kill the run: %s", killed.stdout)
			}
			g.mu.Lock()
			before := map[int]int{}
			for p, n := range g.pages {
				before[p] = n
			}
			g.mu.Unlock()
			if before[1] != 1 || before[2] != 1 {
				t.Fatalf("killed run read pages %v, want 1 and 2 once", before)
			}
			g.revokeSeen(t) // the first process's tokens expire
			rs := []result{killed}
			st := idemsync(t, dir, nil, "status", "job.yaml")
			rs = append(rs, st)
			r := idemsync(t, dir, env, "run", "job.yaml", "--log-level", "debug")
			rs = append(rs, r)
			if r.code != 0 {
				t.Fatalf("continued run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			g.mu.Lock()
			if len(g.bad) > 0 {
				t.Errorf("the API refused: %q", g.bad)
			}
			for p := 1; p <= 4; p++ {
				if n := g.pages[p] - before[p]; p <= 2 && n != 0 || p == 4 && n != 1 || p == 3 && g.pages[3] < 1 {
					t.Errorf("page %d read %d time(s) by the continued run (%v then %v)", p, n, before, g.pages)
				}
			}
			g.mu.Unlock()
			if n := countRows(t, filepath.Join(dir, "out.db"), "items"); n != 8 {
				t.Errorf("%d rows, want 8", n)
			}
			rs = append(rs, idemsync(t, dir, env, "run", "job.yaml", "--json", "--log-format", "json", "--log-level", "debug"))
			authScanAll(t, dir, &canaryScan{canaries: g.canaries(canaries...)}, rs...)
		})
	}
}

// The token in a next URL goes stale within one run: the API revokes the
// token it wrote into page 2's next URL (a 401 on page 3), or the job's
// tokens live shorter than the refresh margin, so that each request
// fetches a new one and a refresh token grant revokes the one before. The
// request must carry the token it is sent with in its URL as well as in
// its header, and the retry after a 401 the refreshed one in both.
func TestAuthTokenInNextURLStale(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		exp        time.Duration
		stale      int
	}{
		{"revoked client credentials", "oauth2_client_credentials", time.Hour, 2},
		{"revoked refresh token", "oauth2_refresh_token", time.Hour, 2},
		{"short-lived refresh token", "oauth2_refresh_token", 5 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := authNewOAuth(t, tc.exp, 0)
			g := authNewGraph(t, o)
			if tc.stale > 0 {
				g.stale[tc.stale] = true
			}
			block := fmt.Sprintf("    type: %s\n    token_url: %s\n    client_id: %s\n    client_secret: %s", tc.kind, o.tokenURL, authClientID, authClientSecret)
			if tc.kind == "oauth2_refresh_token" {
				block += "\n    refresh_token: " + o.seedRefresh(t)
			}
			dir := t.TempDir()
			writeJob(t, dir, "job.yaml", authGraphJob(g.url, block))
			r := idemsync(t, dir, nil, "run", "job.yaml")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if n := countRows(t, filepath.Join(dir, "out.db"), "items"); n != 8 {
				t.Errorf("%d rows, want 8", n)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			for p := 1; p <= 4; p++ {
				if g.pages[p] != 1 {
					t.Errorf("page %d read %d time(s), want once: %v", p, g.pages[p], g.pages)
				}
			}
			if tc.stale == 0 && len(g.bad) > 0 {
				t.Errorf("the API refused: %q", g.bad)
			}
		})
	}
}

// A run continued from a next URL holding the token needs a token before
// its first request. The token endpoint failing then is what it is for
// any request: a 503 exits 3 (run again later), never exit 1 asking for
// --restart, which would throw the walk away; a refused client exits 1
// with the auth hint; a hung endpoint is bounded by SIGTERM like any wait
// (docs/guarantees.md, Bounded waits).
func TestAuthTokenInNextURLEndpointDown(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	g := authNewGraph(t, o)
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authGraphJob(g.url, fmt.Sprintf("    type: oauth2_client_credentials\n    token_url: %s\n    client_id: %s\n    client_secret: %s", o.tokenURL, authClientID, authClientSecret)))
	if r := idemsync(t, dir, []string{"IDEMSYNC_TEST_FAILPOINT=checkpoint-committed:2"}, "run", "job.yaml"); r.code == 0 {
		t.Fatalf("the failpoint did not kill the run: %s", r.stdout)
	}
	o.fail5xx.Store(true)
	r := idemsync(t, dir, nil, "run", "job.yaml")
	if r.code != 3 || !strings.Contains(r.stderr, "503") || strings.Contains(r.stderr, "--restart") {
		t.Errorf("token endpoint 503: exit %d, want 3 naming HTTP 503 without --restart:\n%s", r.code, r.stderr)
	}
	o.fail5xx.Store(false)
	_ = o.clients.Set(authClientID, &models.Client{ID: authClientID, Secret: "rotated-elsewhere", Domain: "http://localhost"})
	r = idemsync(t, dir, nil, "run", "job.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "invalid_client") || strings.Contains(r.stderr, "--restart") {
		t.Errorf("refused client: exit %d, want 1 naming invalid_client without --restart:\n%s", r.code, r.stderr)
	}
	_ = o.clients.Set(authClientID, &models.Client{ID: authClientID, Secret: authClientSecret, Domain: "http://localhost"})

	// The token endpoint takes the request and never answers.
	hang, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	tokenURL := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hang <- struct{}{}:
		default:
		}
		<-release
	})) + "/token"
	writeJob(t, dir, "job.yaml", authGraphJob(g.url, fmt.Sprintf("    type: oauth2_client_credentials\n    token_url: %s\n    client_id: %s\n    client_secret: %s", tokenURL, authClientID, authClientSecret)))
	c := authStart(t, dir, nil, "run", "job.yaml")
	select {
	case <-hang:
	case <-time.After(30 * time.Second):
		t.Fatal("the continued run never asked for a token")
	}
	t0 := time.Now()
	_ = c.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
		if d := time.Since(t0); d > 15*time.Second {
			t.Errorf("exited %s after SIGTERM, want within seconds", d)
		}
	case <-time.After(40 * time.Second):
		t.Errorf("still running 40s after SIGTERM, blocked on the token endpoint")
	}
	if c.ProcessState != nil && c.ProcessState.ExitCode() != 130 {
		t.Errorf("exit %d after SIGTERM, want 130", c.ProcessState.ExitCode())
	}
}

// Two resources of one job file, each behind its own OAuth2 server with
// its own client, both APIs writing the caller's token into their next
// URLs: each resource asks for its positions with its own token, and a
// run stopped after two pages of each continues with new tokens, no
// token of either in the state file, status or the logs.
func TestAuthTokenInNextURLTwoResources(t *testing.T) {
	oa, ob := authNewOAuth(t, time.Hour, 0), authNewOAuth(t, time.Hour, 0)
	ga, gb := authNewGraph(t, oa), authNewGraph(t, ob)
	res := func(name string, g *authGraph, o *authOAuth) string {
		return fmt.Sprintf(`  - name: %s
    source:
      url: %s/v1/items
      auth: {type: oauth2_client_credentials, token_url: %s, client_id: %s, client_secret: "${CS}"}
    target: {table: %s}
`, name, g.url, o.tokenURL, authClientID, name)
	}
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", `name: two
defaults:
  source: {records: data}
  pagination: {style: cursor, next_url: paging.next}
  retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
  target: {url: "sqlite:out.db", key: [id]}
resources:
`+res("a", ga, oa)+res("b", gb, ob))
	env := []string{"CS=" + authClientSecret}
	var rs []result
	r := idemsync(t, dir, env, "run", "job.yaml", "--max-pages", "2", "--log-level", "debug")
	rs = append(rs, r)
	ga.revokeSeen(t)
	gb.revokeSeen(t)
	r = idemsync(t, dir, env, "run", "job.yaml", "--log-level", "debug")
	rs = append(rs, r)
	if r.code != 0 {
		t.Fatalf("continued run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, g := range []*authGraph{ga, gb} {
		g.mu.Lock()
		if len(g.bad) > 0 {
			t.Errorf("the API refused: %q", g.bad)
		}
		g.mu.Unlock()
	}
	for _, tb := range []string{"a", "b"} {
		if n := countRows(t, filepath.Join(dir, "out.db"), tb); n != 8 {
			t.Errorf("%s: %d rows, want 8", tb, n)
		}
	}
	rs = append(rs, idemsync(t, dir, env, "run", "job.yaml", "--json", "--log-format", "json", "--log-level", "debug"))
	authScanAll(t, dir, &canaryScan{canaries: append(ga.canaries(authClientSecret), gb.canaries()...)}, rs...)
}

// A run stopped on a next URL holding the job's OAuth2 token, continued
// after source.auth became a static bearer token: the position cannot be
// asked for as the API gave it (the job has no fetched token to put
// there), so the run fails with exit 1 saying so and naming --restart,
// which then completes; the static token never shows.
func TestAuthTokenInNextURLAuthChanged(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	g := authNewGraph(t, o)
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authGraphJob(g.url, fmt.Sprintf("    type: oauth2_client_credentials\n    token_url: %s\n    client_id: %s\n    client_secret: %s", o.tokenURL, authClientID, authClientSecret)))
	if r := idemsync(t, dir, []string{"IDEMSYNC_TEST_FAILPOINT=checkpoint-committed:2"}, "run", "job.yaml"); r.code == 0 {
		t.Fatalf("the failpoint did not kill the run: %s", r.stdout)
	}
	// A long-lived token issued outside the job, given as a static bearer.
	static := ""
	{
		ti, err := o.mgr.GenerateAccessToken(t.Context(), oauth2.ClientCredentials, &oauth2.TokenGenerateRequest{ClientID: authClientID, ClientSecret: authClientSecret})
		if err != nil {
			t.Fatal(err)
		}
		static = ti.GetAccess()
	}
	writeJob(t, dir, "job.yaml", authGraphJob(g.url, "    type: bearer\n    token: \"${TOK}\""))
	env := []string{"TOK=" + static}
	r := idemsync(t, dir, env, "run", "job.yaml")
	rs := []result{r}
	if r.code != 1 || !strings.Contains(r.stderr, "source.auth changed") || !strings.Contains(r.stderr, "--restart") {
		t.Errorf("exit %d, want 1 saying source.auth changed and naming --restart:\n%s", r.code, r.stderr)
	}
	r = idemsync(t, dir, env, "run", "job.yaml", "--restart")
	rs = append(rs, r)
	if r.code != 0 {
		t.Fatalf("--restart: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := countRows(t, filepath.Join(dir, "out.db"), "items"); n != 8 {
		t.Errorf("%d rows, want 8", n)
	}
	authScanAll(t, dir, &canaryScan{canaries: g.canaries(authClientSecret, static)}, rs...)
}

// Fan-out: a child resource (two parents walked at once) whose API writes
// the caller's token into each parent's next URLs, killed in the middle of
// the children and continued by a new process with new tokens: every
// child page is asked for with a token the server holds, the tables end
// equal to the API, no token in the state file, status or logs.
func TestAuthTokenInNextURLFanout(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	g := authNewGraph(t, o)
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: fan
defaults:
  source:
    records: data
    auth: {type: oauth2_client_credentials, token_url: %s, client_id: %s, client_secret: "${CS}"}
  pagination: {style: cursor, next_url: paging.next}
  retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
  target: {url: "sqlite:out.db"}
resources:
  - name: parents
    source: {url: "%s/v1/items"}
    target: {table: parents, key: [id]}
  - name: kids
    parent: parents
    fanout_concurrency: 2
    source: {url: "%s/v1/items", query: {parent: "{parent.id}"}}
    target:
      table: kids
      key: [parent_id, id]
      columns: {parent_id: {parent: id}, id: {path: id, type: integer}, name: {path: name, type: text}}
`, o.tokenURL, authClientID, g.url, g.url))
	env := []string{"CS=" + authClientSecret}
	killed := idemsync(t, dir, append(env, "IDEMSYNC_TEST_FAILPOINT=checkpoint-committed:10"), "run", "job.yaml", "--log-level", "debug")
	if killed.code == 0 {
		t.Fatalf("the failpoint did not kill the run: %s", killed.stdout)
	}
	st := idemsync(t, dir, nil, "status", "job.yaml", "--json")
	if !strings.Contains(st.stdout, `access_token={$t}\u0026page=`) && !strings.Contains(st.stdout, `access_token={$t}&page=`) {
		t.Fatalf("the killed run left no child position holding the token: %s", st.stdout)
	}
	g.revokeSeen(t)
	r := idemsync(t, dir, env, "run", "job.yaml", "--log-level", "debug")
	if r.code != 0 {
		t.Fatalf("continued run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	g.mu.Lock()
	if len(g.bad) > 0 {
		t.Errorf("the API refused: %q", g.bad)
	}
	g.mu.Unlock()
	if n := countRows(t, filepath.Join(dir, "out.db"), "parents"); n != 8 {
		t.Errorf("%d parents, want 8", n)
	}
	if n := countRows(t, filepath.Join(dir, "out.db"), "kids"); n != 64 {
		t.Errorf("%d kids, want 64", n)
	}
	rs := []result{killed, st, r, idemsync(t, dir, env, "run", "job.yaml", "--json", "--log-format", "json", "--log-level", "debug")}
	authScanAll(t, dir, &canaryScan{canaries: g.canaries(authClientSecret)}, rs...)
}
