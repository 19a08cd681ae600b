package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
)

// An API that echoes the token JSON-escaped (\/ and \u002d) in a 400 body:
// the token appears in no output and not in the state file.
func TestSecretsV2JSONEscapedEcho(t *testing.T) {
	const token = "tok/en-canary-4d2e/x"
	escaped := strings.NewReplacer("/", `\/`, "-", `\u002d`).Replace(token)
	api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"token %s is not allowed here; raw %s"}`, escaped, strings.ReplaceAll(token, "/", `\\/`))
	}))
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authJob(api, "    type: bearer\n    token: \"${TOKEN}\""))
	r := idemsync(t, dir, []string{"TOKEN=" + token}, "run", "job.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "HTTP 400") {
		t.Fatalf("exit %d, want 1 with HTTP 400:\n%s", r.code, r.stderr)
	}
	authScanAll(t, dir, &canaryScan{canaries: []string{token, escaped, "canary-4d2e", `canary\u002d4d2e`}}, r)
}

// A next link to another origin that source.follow_origins lists is
// followed without any credential: no configured header, no auth, no
// query API key.
func TestSecretsV2NextLinkToAnotherOrigin(t *testing.T) {
	const token, key = "bearer-canary-81f0", "query-key-canary-55aa"
	var mu gosync.Mutex
	var leaks []string
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for _, h := range []string{"Authorization", "X-Custom"} {
			if v := r.Header.Get(h); v != "" {
				leaks = append(leaks, h+": "+v)
			}
		}
		if strings.Contains(r.URL.RawQuery, key) {
			leaks = append(leaks, "query: "+r.URL.RawQuery)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":[{"id":3}],"next":null}`)
	}))
	home := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token || r.URL.Query().Get("key") != key || r.Header.Get("X-Custom") == "" {
			http.Error(w, "no credentials", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[{"id":1},{"id":2}],"next":%s}`, strconv.Quote(other+"/elsewhere?page=2"))
	}))
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: authjob
source:
  url: %s
  records: data
  headers: {X-Custom: "${HDR}"}
  query: {key: "${KEY}"}
  auth: {type: bearer, token: "${TOKEN}"}
  follow_origins: [%s]
pagination: {style: cursor, next_url: next}
retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, home, other))
	r := idemsync(t, dir, []string{"TOKEN=" + token, "KEY=" + key, "HDR=hdr-canary-0c1b"}, "run", "job.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if n := authRows(t, dir); n != 3 {
		t.Errorf("%d rows, want 3", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaks) > 0 {
		t.Errorf("the other origin received credentials: %v", leaks)
	}
	if strings.Count(r.stderr, "another origin") != 1 {
		t.Errorf("want one warning about the other origin:\n%s", r.stderr)
	}
	authScanAll(t, dir, &canaryScan{canaries: []string{token, key, "hdr-canary-0c1b"}}, r)
}
