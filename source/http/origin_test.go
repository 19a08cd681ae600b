package httpsource

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// A next URL on another origin that source.follow_origins allows is
// requested without any credential: no
// configured header, no source.query value, no URL userinfo; a warning is
// logged once. The source's own origin still gets them.
func TestNextURLToAnotherOriginCarriesNoCredentials(t *testing.T) {
	other := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, okPage) })
	home := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, okPage) })
	u, _ := url.Parse(home.URL)
	u.User = url.UserPassword("user", "pw-secret-42")
	spec := fetchSpec(u.String(), "  headers: {X-Api-Key: \"${KEY}\", Authorization: \"Bearer ${TOKEN}\"}\n  query: {api_key: \"${KEY}\"}\n  follow_origins: [\""+other.URL+"\"]\n", "")
	f, logs := newTestFetcher(t, spec, map[string]string{"KEY": "key-123456", "TOKEN": "token-123456"})
	for i := 0; i < 2; i++ {
		next, err := f.BuildURL(other.URL+"/page2?cursor=abc", url.Values{}, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Fetch(context.Background(), contract.Request{URL: next}); err != nil {
			t.Fatal(err)
		}
	}
	got := other.requests()
	if len(got) != 2 {
		t.Fatalf("%d requests at the other origin, want 2", len(got))
	}
	for _, h := range got {
		for _, k := range []string{"X-Api-Key", "Authorization"} {
			if v := h.header.Get(k); v != "" {
				t.Errorf("other origin received %s: %q", k, v)
			}
		}
		if strings.Contains(h.url, "key-123456") || strings.Contains(h.url, "api_key") {
			t.Errorf("other origin received the api key in %s", h.url)
		}
	}
	if n := strings.Count(logs.String(), "another origin"); n != 1 {
		t.Errorf("%d warnings about the other origin, want 1:\n%s", n, logs.String())
	}
	next, _ := f.BuildURL(home.URL+"/page2", url.Values{}, true)
	if _, err := f.Fetch(context.Background(), contract.Request{URL: next}); err != nil {
		t.Fatal(err)
	}
	h := home.requests()
	if len(h) != 1 || h[0].header.Get("X-Api-Key") != "key-123456" || !strings.Contains(h[0].url, "api_key=key-123456") {
		t.Errorf("own origin lost its credentials: %+v", h)
	}
	if user, pw, ok := h[0].header.Get("Authorization"), "", false; ok || user != "Bearer token-123456" {
		_ = pw
		t.Errorf("own origin Authorization = %q", user)
	}
}

// A ${VAR} in the source URL's path is not stored with a next URL that
// repeats it; BuildURL puts it back.
func TestCheckpointURLWithoutPathSecret(t *testing.T) {
	spec := fetchSpec("http://api.example.com/v1/${TENANT}/items", "", "")
	f, _ := newTestFetcher(t, spec, map[string]string{"TENANT": "tenant-secret-77"})
	next := "http://api.example.com/v1/tenant-secret-77/items?cursor=abc"
	stored := f.CheckpointURL(next)
	if strings.Contains(stored, "tenant-secret-77") {
		t.Fatalf("stored URL holds the secret: %s", stored)
	}
	got, err := f.BuildURL(stored, nil, true)
	if err != nil || got != next {
		t.Errorf("BuildURL(%s) = %s, %v; want %s", stored, got, err, next)
	}
	if other := f.CheckpointURL("http://cdn.example.net/v1/x/items"); other != "http://cdn.example.net/v1/x/items" {
		t.Errorf("another origin's URL changed: %s", other)
	}
}
