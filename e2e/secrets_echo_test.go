package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
)

// echoAPI is an API that echoes every credential a request carries back
// into what it answers, at a chosen offset of its body: in a 403 body, in
// an error_path payload of a 200, or inside a bad record (dead letter).
type echoAPI struct {
	mu   gosync.Mutex
	mode string // "403", "payload" or "dead"
	offs []int  // offsets of the echo in the body, one per request, cycled
	n    int
	seen map[string]bool // every credential value received
}

// creds returns the credential values r carries: a bearer or command
// token, basic credentials (the password and the base64 form), an API key
// in a header or the query.
func (a *echoAPI) creds(r *http.Request) []string {
	var out []string
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, v, _ := strings.Cut(h, " ")
		out = append(out, v)
		if scheme == "Basic" {
			if b, err := base64.StdEncoding.DecodeString(v); err == nil {
				_, pw, _ := strings.Cut(string(b), ":")
				out = append(out, pw)
			}
		}
	}
	for _, v := range []string{r.Header.Get("X-Api-Key"), strings.TrimPrefix(r.Header.Get("X-Token"), "Token "), r.URL.Query().Get("api_key")} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (a *echoAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	creds := a.creds(r)
	a.mu.Lock()
	for _, c := range creds {
		a.seen[c] = true
	}
	mode, off := a.mode, a.offs[a.n%len(a.offs)]
	a.n++
	a.mu.Unlock()
	echo := strings.Join(creds, " ")
	w.Header().Set("Content-Type", "application/json")
	switch mode {
	case "403": // raw, as careless servers print it: tabs and double spaces as they are
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"error":"%s%s rejected"}`, strings.Repeat(".", off-len(`{"error":"`)), echo)
	case "payload":
		msg, _ := json.Marshal(strings.Repeat(".", off-len(`{"error":"`)) + echo + " rejected")
		fmt.Fprintf(w, `{"error":%s,"data":[]}`, msg)
	case "dead":
		if r.URL.Query().Get("page") != "1" {
			fmt.Fprint(w, `{"data":[]}`)
			return
		}
		self, _ := json.Marshal("http://" + r.Host + "/v1/items?" + r.URL.RawQuery)
		auth, _ := json.Marshal(echo)
		fmt.Fprintf(w, `{"data":[{"id":null,"self":%s,"auth":%s},{"id":1,"self":"ok","auth":"none"}]}`, self, auth)
	}
}

func (a *echoAPI) set(mode string, offs ...int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mode, a.offs, a.n = mode, offs, 0
}

func (a *echoAPI) seenCreds() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for c := range a.seen {
		out = append(out, c)
	}
	return out
}

// Every auth type, with a token planted, against an API that echoes it:
// in a 403 body at every offset around the 200-byte excerpt limit (stderr,
// run --json error, status --json last_run.error, the state file's
// runs.error), in an error_path payload at every offset (the retry log),
// and in a bad record (the dead letter: state file, status --dead-letters
// text and --json). Passwords and keys with double spaces and tabs too. No
// part of 8 bytes or more of any credential appears anywhere.
func TestSecretsEchoPositions(t *testing.T) {
	o := authNewOAuth(t, 0, 0) // tokens that expire at once: a new one on every run
	for _, tc := range []struct{ name, auth string }{
		{"bearer", "type: bearer\n    token: %[1]q"},
		{"basic", "type: basic\n    username: alice\n    password: %[1]q"},
		{"api_key header", "type: api_key\n    name: X-Api-Key\n    value: %[1]q"},
		{"api_key query", "type: api_key\n    name: api_key\n    value: %[1]q\n    in: query"},
		{"oauth2_client_credentials", "type: oauth2_client_credentials\n    token_url: %[3]s\n    client_id: " + authClientID + "\n    client_secret: " + authClientSecret},
		{"oauth2_refresh_token", "type: oauth2_refresh_token\n    token_url: %[3]s\n    client_id: " + authClientID + "\n    client_secret: " + authClientSecret + "\n    refresh_token: %[4]s"},
		{"command", "type: command\n    run: [%[2]q]\n    header: X-Token\n    prefix: \"Token \""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			planted := canary(t, "")
			switch tc.name {
			case "basic":
				planted = "pass  word  " + planted + "  s3cret!"
			case "api_key header":
				planted = "ak\t\tlive\t" + planted
			}
			script := filepath.Join(dir, "token.sh")
			if err := os.WriteFile(script, []byte("#!/bin/sh\necho "+planted+"\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			// Literal values, not ${VAR}s: status runs without the
			// environment, so what it prints must be redacted already.
			auth := fmt.Sprintf(tc.auth, planted, script, o.tokenURL, o.seedRefresh(t))
			var env []string
			api := &echoAPI{seen: map[string]bool{}}
			url := serve(t, api)
			job := func(extra string) {
				writeJob(t, dir, "job.yaml", fmt.Sprintf("name: echo\nsource:\n  url: %s/v1/items\n  records: data\n  auth:\n    %s\n%spagination: {style: page}\nretry: {attempts: 40, min_wait: 1ms, max_wait: 1ms}\ntarget: {url: \"sqlite:out.db\", table: items, key: [id], on_bad_record: skip}\n", url, auth, extra))
			}
			var rs []result
			do := func(want int, args ...string) {
				t.Helper()
				r := idemsync(t, dir, env, args...)
				if r.code != want {
					t.Fatalf("%v: exit %d, want %d\n%s%s", args, r.code, want, r.stdout, r.stderr)
				}
				rs = append(rs, r)
			}
			job("")
			api.set("403", 150, 165, 175, 181, 187, 190, 193, 196, 199, 202)
			for i := 0; i < 5; i++ {
				do(1, "run", "job.yaml")
				do(1, "run", "job.yaml", "--json", "--log-format", "json")
			}
			if st := statusOf(t, dir, "job.yaml"); st.LastRun == nil || !strings.Contains(st.LastRun.Error, "HTTP 403") {
				t.Fatalf("status --json last_run: %+v", st.LastRun)
			}
			job("  error_path: error\n")
			offs := []int{}
			for off := 150; off <= 205; off++ {
				offs = append(offs, off)
			}
			api.set("payload", offs...)
			do(3, "run", "job.yaml", "--log-level", "debug")
			job("")
			api.set("dead", 150)
			do(0, "run", "job.yaml")
			if st := statusOf(t, dir, "job.yaml", "--dead-letters"); len(st.Dead) != 1 || !strings.Contains(st.Dead[0].Raw, "/v1/items?") {
				t.Fatalf("dead letters: %+v", st.Dead)
			}
			do(0, "status", "job.yaml", "--dead-letters")
			do(0, "status", "job.yaml", "--dead-letters", "--json")
			canaries := append(api.seenCreds(), planted, authClientSecret)
			if len(canaries) < 2 && tc.name != "api_key query" {
				t.Fatalf("the API saw no credential: %v", canaries)
			}
			authScanAll(t, dir, &canaryScan{canaries: canaries, parts: 8}, rs...)
		})
	}
}

// A ${VAR} that is no credential (a target path, a table name, a records
// path) is printed as it is: with DIR=out the warning about another origin
// still reads "followed without the job's credentials", and nothing at
// all is redacted where no secret was.
func TestSecretsPlainVarsNotRedacted(t *testing.T) {
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":[{"id":3}],"next":null}`)
	}))
	home := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[{"id":1},{"id":2}],"next":%q}`, other+"/elsewhere?page=2")
	}))
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: plain
source:
  url: %s
  records: ${RECORDS}
  follow_origins: [%s]
pagination: {style: cursor, next_url: next}
target: {url: "sqlite:${DIR}/x.db", table: "${TABLE}", key: [id]}
`, home, other))
	env := []string{"DIR=out", "TABLE=items", "RECORDS=data"}
	r := idemsync(t, dir, env, "run", "job.yaml")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "followed without the job's credentials") {
		t.Errorf("the warning about another origin is mangled:\n%s", r.stderr)
	}
	st := idemsync(t, dir, env, "status", "job.yaml", "--json")
	for what, s := range map[string]string{"run stderr": r.stderr, "run stdout": r.stdout, "status": st.stdout + st.stderr} {
		if strings.Contains(s, "[redacted]") {
			t.Errorf("%s redacts where there is no secret:\n%s", what, s)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "x.db")); err != nil {
		t.Errorf("target: %v", err)
	}
}
