package httpsource

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// A ${VAR} in source.body is a secret (docs/job-file.md, "What is and is
// not a secret"), and no secret goes to another origin, even one that
// source.follow_origins lists: a request whose body holds one is refused
// there (permanent, naming the origin), whether a 307 redirect or a next
// URL leads to it. The source's own origin gets the body as it is.
func TestBodySecretNeverSentToAnotherOrigin(t *testing.T) {
	const token = "gql-canary-7d1e4b"
	var leaked []string
	other := newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), token) {
			leaked = append(leaked, r.URL.Path)
		}
		writeJSON(w, 200, okPage)
	})
	var homeBodies []string
	home := newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		homeBodies = append(homeBodies, string(b))
		if r.URL.Path == "/away" {
			http.Redirect(w, r, other.URL+"/graphql", http.StatusTemporaryRedirect)
			return
		}
		writeJSON(w, 200, okPage)
	})
	src := "  method: POST\n  body: '{\"query\":\"{ items { id } }\",\"variables\":{\"key\":\"${TOKEN}\"}}'\n  follow_origins: [\"" + other.URL + "\"]\n"
	f, _ := newTestFetcher(t, fetchSpec(home.URL+"/graphql", src, ""), map[string]string{"TOKEN": token})
	if _, err := f.Fetch(context.Background(), contract.Request{URL: home.URL + "/graphql"}); err != nil {
		t.Fatalf("same origin: %v", err)
	}
	if len(homeBodies) != 1 || !strings.Contains(homeBodies[0], token) {
		t.Fatalf("the source's origin got %q, want the body with its secret", homeBodies)
	}
	for _, u := range []string{home.URL + "/away", other.URL + "/page2"} {
		_, err := f.Fetch(context.Background(), contract.Request{URL: u})
		var e *contract.Error
		if !errors.As(err, &e) || e.Class != contract.Permanent || !strings.Contains(e.Msg, other.URL) || !strings.Contains(e.Msg, "source.body") {
			t.Errorf("%s: %v, want a permanent refusal naming %s and source.body", u, err, other.URL)
		}
		if err != nil && strings.Contains(err.Error()+e.Hint, token) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
	if len(leaked) > 0 || len(other.requests()) > 0 {
		t.Errorf("the other origin got %d request(s), %q with the secret", len(other.requests()), leaked)
	}
	// A body without a secret still follows there.
	plain := strings.Replace(src, "${TOKEN}", "public", 1)
	f, _ = newTestFetcher(t, fetchSpec(home.URL+"/graphql", plain, ""), nil)
	for _, u := range []string{home.URL + "/away", other.URL + "/page2"} {
		if _, err := f.Fetch(context.Background(), contract.Request{URL: u}); err != nil {
			t.Errorf("%s without a secret in the body: %v", u, err)
		}
	}
	if n := len(other.requests()); n != 2 {
		t.Errorf("the other origin got %d request(s), want 2", n)
	}
}
