package initgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// init follows redirects (descriptions are often served from another
// host), but Go's client sends the URL it was given, query secrets
// included, as the Referer of the next request, to whatever origin the
// redirect names. Neither the sample page's nor the description's fetch
// may hand the first URL's query to another origin.
func TestInitRedirectSendsNoReferer(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Referer")+" "+r.URL.RawQuery)
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, ".json") {
			_, _ = w.Write([]byte(`{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {}}`))
			return
		}
		_, _ = w.Write([]byte(`{"data": [{"id": 1}]}`))
	}))
	defer other.Close()
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer first.Close()

	u, _ := url.Parse(first.URL + "/items?api_key=canary-init-secret")
	if _, err := Fetch(context.Background(), u); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if _, err := ReadOpenAPI(context.Background(), first.URL+"/openapi.json?token=canary-init-secret"); err != nil {
		t.Fatalf("ReadOpenAPI: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("the other origin saw %d requests, want 2: %q", len(seen), seen)
	}
	for _, s := range seen {
		if strings.Contains(s, "canary-init-secret") {
			t.Fatalf("the other origin was sent the first URL's query: %q", s)
		}
	}
}
