package httpsource

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// unresolvable is an origin whose host can never resolve (.invalid): a
// request that reached DNS would fail with a lookup error, not a refusal.
const unresolvable = "https://api.github.invalid"

// assertRefused checks that err is the refusal of origin: permanent, naming
// the origin and source.follow_origins, and no DNS or connection error.
func assertRefused(t *testing.T, err error, origin string) {
	t.Helper()
	var e *contract.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v, want an *contract.Error", err, err)
	}
	text := e.Error() + " " + e.Hint
	if e.Class != contract.Permanent || !strings.Contains(text, origin) || !strings.Contains(text, "source.follow_origins") {
		t.Errorf("want a permanent refusal naming %s and source.follow_origins, got %v: %s", origin, e.Class, text)
	}
	for _, dns := range []string{"lookup", "no such host", "dial", "connection refused"} {
		if strings.Contains(text, dns) {
			t.Errorf("the refused host was looked up or dialled (%q): %s", dns, text)
		}
	}
}

// A next URL on another origin is refused by default, before any request
// (no DNS lookup); the same origin is followed as always.
func TestNextURLToAnotherOriginRefused(t *testing.T) {
	home := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, okPage) })
	f, _ := newTestFetcher(t, fetchSpec(home.URL, "", ""), nil)
	next, err := f.BuildURL(unresolvable+"/repos?page=2", url.Values{}, true)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Fetch(context.Background(), contract.Request{URL: next})
	assertRefused(t, err, unresolvable)
	next, _ = f.BuildURL(home.URL+"/page2", url.Values{}, true)
	if _, err := f.Fetch(context.Background(), contract.Request{URL: next}); err != nil {
		t.Fatal(err)
	}
}

// A redirect to another origin is refused the same way (no DNS lookup
// either); one to an origin of source.follow_origins is followed.
func TestRedirectToAnotherOriginRefused(t *testing.T) {
	other := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, okPage) })
	home := newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	f, _ := newTestFetcher(t, fetchSpec(home.URL, "", ""), nil)
	_, err := f.Fetch(context.Background(), contract.Request{URL: home.URL + "/?to=" + url.QueryEscape(unresolvable+"/x")})
	assertRefused(t, err, unresolvable)
	if n := len(home.requests()); n != 1 {
		t.Errorf("%d requests, want 1: a refusal is not retried", n)
	}
	_, err = f.Fetch(context.Background(), contract.Request{URL: home.URL + "/?to=" + url.QueryEscape(other.URL+"/x")})
	assertRefused(t, err, other.URL)

	f, _ = newTestFetcher(t, fetchSpec(home.URL, "  follow_origins: ["+other.URL+"]\n", ""), nil)
	if _, err := f.Fetch(context.Background(), contract.Request{URL: home.URL + "/?to=" + url.QueryEscape(other.URL+"/x")}); err != nil {
		t.Fatalf("an allowed origin: %v", err)
	}
}
