package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
)

// leakLog records every request another origin receives that carries one
// of the job's credentials: in a header, the query or the body.
type leakLog struct {
	mu      gosync.Mutex
	secrets []string
	leaks   []string
	n       int
}

func (l *leakLog) see(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	for _, s := range l.secrets {
		for k, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, s) {
					l.leaks = append(l.leaks, fmt.Sprintf("header %s carries %s", k, s))
				}
			}
		}
		if strings.Contains(r.URL.RawQuery, s) || strings.Contains(r.URL.RawQuery, url.QueryEscape(s)) {
			l.leaks = append(l.leaks, "query carries "+s)
		}
		if strings.Contains(string(body), s) || strings.Contains(string(body), url.QueryEscape(s)) {
			l.leaks = append(l.leaks, "body carries "+s)
		}
	}
}

func (l *leakLog) check(t *testing.T, what string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.leaks) > 0 {
		t.Errorf("%s: the other origin received the job's credentials (%d requests): %v", what, l.n, l.leaks)
	}
}

// A token endpoint that redirects (307, which keeps the method and the
// body) to another origin must not get the client secret or the refresh
// token sent there, in the body (auth_style: body) or in Basic
// credentials (auth_style: header; the other origin is the same host on
// another port, which Go's client treats as the same domain). The run
// fails naming the redirect; nothing reaches the other origin.
func TestSecretsTokenEndpointRedirect(t *testing.T) {
	const secret, refresh = "cs-canary-7c1e94", "rt-canary-0b5d22"
	for _, tc := range []struct{ name, auth string }{
		{"client_credentials body", "type: oauth2_client_credentials\n    auth_style: body"},
		{"client_credentials header", "type: oauth2_client_credentials\n    auth_style: header"},
		{"refresh_token body", "type: oauth2_refresh_token\n    auth_style: body\n    refresh_token: " + refresh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaks := &leakLog{secrets: []string{secret, refresh}}
			other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				leaks.see(r)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"access_token":"stolen","token_type":"bearer","expires_in":3600}`)
			}))
			home := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/token" {
					http.Redirect(w, r, other+"/token", http.StatusTemporaryRedirect)
					return
				}
				authPage(w, r)
			}))
			dir := t.TempDir()
			writeJob(t, dir, "job.yaml", authJob(home+"/items", fmt.Sprintf("    %s\n    token_url: %s/token\n    client_id: c1\n    client_secret: %s", tc.auth, home, secret)))
			r := idemsync(t, dir, nil, "run", "job.yaml")
			leaks.check(t, "token endpoint redirect")
			if r.code != 1 || !strings.Contains(r.stderr, "token endpoint") || !strings.Contains(r.stderr, "another origin") {
				t.Errorf("exit %d, want 1 naming the token endpoint's redirect to another origin:\n%s", r.code, r.stderr)
			}
			// The refresh token is kept in the state file (the one
			// exception, docs/guarantees.md), never printed.
			scan := &canaryScan{canaries: []string{secret, refresh}}
			scan.result(t, "run", r)
			authScanAll(t, dir, &canaryScan{canaries: []string{secret}}, r)
			for _, args := range [][]string{{"status", "job.yaml"}, {"status", "job.yaml", "--json"}} {
				scan.result(t, strings.Join(args, " "), idemsync(t, dir, nil, args...))
			}
		})
	}
}

// An API that echoes the request's query, source.query secret and query
// API key included, into where the next request goes (a redirect's
// Location, a next_url, a Link header) on another origin that
// source.follow_origins lists: that origin never receives them.
func TestSecretsEchoedQueryToAnotherOrigin(t *testing.T) {
	const qkey, akey, hdr = "qs-canary-5e81a0", "ak-canary-c2d7f3", "hd-canary-9a04b6"
	for _, how := range []string{"redirect", "next_url", "link"} {
		t.Run(how, func(t *testing.T) {
			leaks := &leakLog{secrets: []string{qkey, akey, hdr}}
			other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				leaks.see(r)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"data":[{"id":3}],"next":null}`)
			}))
			home := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("key") != qkey || r.URL.Query().Get("api_key") != akey || r.Header.Get("X-Custom") != hdr {
					http.Error(w, "no credentials", http.StatusUnauthorized)
					return
				}
				echo := other + "/elsewhere?" + r.URL.RawQuery + "&page=2"
				w.Header().Set("Content-Type", "application/json")
				switch how {
				case "redirect":
					http.Redirect(w, r, echo, http.StatusFound)
				case "next_url":
					fmt.Fprintf(w, `{"data":[{"id":1},{"id":2}],"next":%q}`, echo)
				case "link":
					w.Header().Set("Link", "<"+echo+`>; rel="next"`)
					fmt.Fprint(w, `{"data":[{"id":1},{"id":2}]}`)
				}
			}))
			pagination := map[string]string{"redirect": "{style: none}", "next_url": "{style: cursor, next_url: next}", "link": "{style: link}"}[how]
			dir := t.TempDir()
			writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: echojob
source:
  url: %s/items
  records: data
  headers: {X-Custom: "${HDR}"}
  query: {key: "${KEY}"}
  auth: {type: api_key, name: api_key, in: query, value: "${AKEY}"}
  follow_origins: [%s]
pagination: %s
retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, home, other, pagination))
			r := idemsync(t, dir, []string{"KEY=" + qkey, "AKEY=" + akey, "HDR=" + hdr}, "run", "job.yaml")
			if leaks.n == 0 {
				t.Fatalf("the other origin was never asked: exit %d\n%s", r.code, r.stderr)
			}
			leaks.check(t, how)
			authScanAll(t, dir, &canaryScan{canaries: []string{qkey, akey, hdr}}, r)
		})
	}
}

// A ${VAR} secret in source.url's own query (?token=${TOKEN}) that the API
// echoes into its next URLs (same origin) is not kept in the checkpoint:
// the state file and status without the job file (no secrets to redact
// with) never show it, and every page is still fetched with the token.
func TestSecretsURLQueryEchoedIntoNextURL(t *testing.T) {
	const token = "ut-canary-3f9c1d"
	home := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != token {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		p, _ := strconv.Atoi(r.URL.Query().Get("p"))
		w.Header().Set("Content-Type", "application/json")
		if p >= 3 {
			fmt.Fprintf(w, `{"data":[{"id":%d}],"next":null}`, p+1)
			return
		}
		q := r.URL.Query()
		q.Set("p", strconv.Itoa(p+1))
		fmt.Fprintf(w, `{"data":[{"id":%d}],"next":%q}`, p+1, "http://"+r.Host+r.URL.Path+"?"+q.Encode())
	}))
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: urlq
source:
  url: %s/items?token=${TOKEN}
  records: data
pagination: {style: cursor, next_url: next}
retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, home))
	env := []string{"TOKEN=" + token}
	var rs []result
	for _, args := range [][]string{{"run", "job.yaml", "--max-pages", "2"}, {"status", "--state", filepath.Join(dir, ".idemsync", "state.db")},
		{"status", "--state", filepath.Join(dir, ".idemsync", "state.db"), "--json"}, {"run", "job.yaml"}} {
		r := idemsync(t, dir, env, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
		rs = append(rs, r)
	}
	if n := authRows(t, dir); n != 4 {
		t.Errorf("%d rows, want 4", n)
	}
	authScanAll(t, dir, &canaryScan{canaries: []string{token}}, rs...)
}

// An API whose error page is HTML echoes a password HTML-escaped (&amp;,
// &lt;, &#39;, &#x22;): the password shows in no output and not in the
// state file, in none of its forms.
func TestSecretsHTMLEscapedEcho(t *testing.T) {
	const pw = `pa&ss<wo>rd'Zq9"x`
	var escaped []string
	for _, r := range []*strings.Replacer{
		strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", `"`, "&quot;"),
		strings.NewReplacer("&", "&#38;", "<", "&#x3C;", ">", "&#X3e;", "'", "&#x27;", `"`, "&#34;"),
	} {
		escaped = append(escaped, r.Replace(pw))
	}
	var n atomic.Int64
	api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "<html><body><h1>403</h1><p>password %s refused</p></body></html>", escaped[n.Add(1)%2])
	}))
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authJob(api, "    type: basic\n    username: alice\n    password: '"+strings.ReplaceAll(pw, "'", "''")+"'"))
	var rs []result
	for _, args := range [][]string{{"run", "job.yaml"}, {"run", "job.yaml", "--json", "--log-format", "json"}} {
		r := idemsync(t, dir, nil, args...)
		if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "403") {
			t.Fatalf("%v: exit %d, want 1 naming the 403:\n%s", args, r.code, r.stderr)
		}
		rs = append(rs, r)
	}
	authScanAll(t, dir, &canaryScan{canaries: append([]string{pw, "Zq9"}, escaped...)}, rs...)
}
