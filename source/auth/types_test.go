package auth

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/jobfile"
	idsync "github.com/idemsync/idemsync/sync"
)

// Every type of the enum has a wrapper, and wrappers has no other type.
func TestWrappersComplete(t *testing.T) {
	if got, want := slices.Sorted(maps.Keys(wrappers)), slices.Sorted(slices.Values(idsync.AuthTypes)); !slices.Equal(got, want) {
		t.Errorf("wrappers has types %v, idsync.AuthTypes %v", got, want)
	}
}

// wireBlocks is, for every auth type, a source.auth block (YAML lines,
// with TOKEN_URL and SEED to replace) whose credentials are literals: a
// ${VAR} would be a secret whatever the type's table says.
var wireBlocks = map[string]string{
	idsync.AuthBearer:            "token: tok-Zq7Vx3Kp",
	idsync.AuthBasic:             "username: alice-user\n    password: pw-Wm2Rt8Ln",
	idsync.AuthAPIKey:            "name: X-Api-Key\n    value: ak-Hs6Jd4Qa",
	idsync.AuthClientCredentials: "token_url: TOKEN_URL\n    client_id: " + clientID + "\n    client_secret: " + clientSecret + "\n    auth_style: header",
	idsync.AuthRefreshToken:      "token_url: TOKEN_URL\n    client_id: " + clientID + "\n    client_secret: " + clientSecret + "\n    auth_style: body\n    refresh_token: SEED",
	idsync.AuthCommand:           "run: [echo, cmd-Tk9Lp2Qw]\n    prefix: \"Token \"",
}

// wire records every request an auth chain sends (to the API and to the
// token endpoint) and forwards it.
type wire struct {
	mu   gosync.Mutex
	reqs []*http.Request
	form []url.Values // each request's form body, parsed
}

func (w *wire) RoundTrip(r *http.Request) (*http.Response, error) {
	var form url.Values
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		form, _ = url.ParseQuery(string(b))
		r.Body = io.NopCloser(strings.NewReader(string(b)))
	}
	w.mu.Lock()
	w.reqs = append(w.reqs, r)
	w.form = append(w.form, form)
	w.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// notCredentials are the headers and form fields a request carries that
// hold no credential: Go's own, and the OAuth2 token request's public
// fields (RFC 6749: the grant type, the scope, the client's id).
var notCredentials = []string{"User-Agent", "Accept-Encoding", "Content-Type", "Content-Length", "grant_type", "scope", "client_id"}

// Every credential an auth type puts on the wire, in any form (a header,
// a query parameter, HTTP Basic to the API or to the token endpoint, a
// form field of the token request), is a secret of the job as the loader
// registered it (and the chain, for tokens learned at run time): nothing
// of it is left once redacted. A type or key whose secret the loader's
// table does not flag, or a form it does not register, fails here.
func TestSecretsOnTheWire(t *testing.T) {
	p := newProvider(t, time.Hour)
	for _, typ := range idsync.AuthTypes {
		block, ok := wireBlocks[typ]
		if !ok {
			t.Errorf("auth type %s has no block in wireBlocks", typ)
			continue
		}
		t.Run(typ, func(t *testing.T) {
			block = strings.NewReplacer("TOKEN_URL", p.tokenURL, "SEED", p.seed(t)).Replace(block)
			spec := fmt.Sprintf("name: j\nsource:\n  url: %s\n  auth:\n    type: %s\n    %s\ntarget: {url: \"sqlite:out.db\", table: items, key: [id]}\n", p.api.URL, typ, block)
			job, err := jobfile.Load([]byte(spec), filepath.Join(t.TempDir(), "job.yaml"), func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatalf("%v\n%s", err, spec)
			}
			wrap, err := New(context.Background(), job.Source.Auth, job.Secrets, Options{Job: "j", Store: &memStore{p: p}})
			if err != nil {
				t.Fatal(err)
			}
			w := &wire{}
			c := &http.Client{Transport: wrap(w)}
			if _, err := get(t, c, p.api.URL+"/items"); err != nil {
				t.Fatal(err)
			}
			prefix := strings.Fields(*cmp(job.Source.Auth.Prefix, new(string)))
			sent := 0
			check := func(where, v string) {
				sent++
				for _, word := range strings.Fields(job.Secrets.Redact(v)) {
					if word != idsync.Redacted && word != "Bearer" && word != "Basic" && !slices.Contains(prefix, word) {
						t.Errorf("%s %q: %q is left once redacted", where, v, word)
					}
				}
			}
			for i, r := range w.reqs {
				for k, vs := range r.Header {
					if !slices.Contains(notCredentials, k) {
						for _, v := range vs {
							check(r.URL.Path+" header "+k, v)
						}
					}
				}
				for k, vs := range r.URL.Query() {
					for _, v := range vs {
						check(r.URL.Path+" query "+k, v)
					}
				}
				for k, vs := range w.form[i] {
					if !slices.Contains(notCredentials, k) {
						for _, v := range vs {
							check(r.URL.Path+" form "+k, v)
						}
					}
				}
			}
			if sent == 0 {
				t.Errorf("no credential was sent: %d requests", len(w.reqs))
			}
		})
	}
}

// cmp returns p, or def when p is nil.
func cmp[T any](p, def *T) *T {
	if p == nil {
		return def
	}
	return p
}

// The query API key is set on the request's query as written: the
// request's other pairs keep their bytes and order (docs/pagination.md,
// "The request's query"), a ?filter=a;b among them.
func TestQueryAuthKeepsTheQueryAsWritten(t *testing.T) {
	var got string
	rt := queryAuth("api_key", "k&1")(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.URL.RawQuery
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	}))
	req, _ := http.NewRequest("GET", "https://api.example.com/x?filter=a;b&expand&api_key=old&z=1", nil)
	if _, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if want := "filter=a;b&expand&api_key=k%261&z=1"; got != want {
		t.Errorf("query sent %q, want %q", got, want)
	}
}
