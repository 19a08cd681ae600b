package fakeapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// The same seed and skip set give the same scenario; skipped kinds and
// kinds a style cannot survive are never enabled.
func TestNewScenario(t *testing.T) {
	skip := map[string]bool{"caps": true}
	styles := map[string]bool{}
	for seed := int64(1); seed <= 300; seed++ {
		a, b := NewScenario(seed, skip), NewScenario(seed, skip)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: %v then %v", seed, a, b)
		}
		styles[a.Style] = true
		for _, k := range a.Behaviours {
			if skip[k] || !a.survivable(k) {
				t.Errorf("seed %d: %s enabled with %s", seed, k, a.Style)
			}
		}
		if a.Concurrency > 1 && !a.PositionStable() {
			t.Errorf("seed %d: %d pages in flight for %s", seed, a.Concurrency, a.Style)
		}
	}
	for _, s := range ModelStyles {
		if !styles[s] {
			t.Errorf("style %s never drawn in 300 seeds", s)
		}
	}
}

// modelGet fetches one list page from a model API and decodes its records.
func modelGet(t *testing.T, srv *httptest.Server, query string) (*http.Response, []ModelRecord) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/list?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Data []ModelRecord }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return resp, body.Data
}

// Each style serves its own position signal, and a cap bounds every page.
func TestModelAPIStyles(t *testing.T) {
	for _, tt := range []struct {
		style, query, header string
		want                 int
	}{
		{"page", "limit=10&page=2", "", 10},
		{"page-count", "limit=10&page=1", "X-Total-Count", 10},
		{"cursor-header", "limit=10", "X-Next-Cursor", 10},
		{"link", "limit=10", "Link", 10},
		{"offset", "limit=10&offset=45", "", 5},
	} {
		t.Run(tt.style, func(t *testing.T) {
			api := NewModelAPI(Scenario{Seed: 1, Style: tt.style, N: 50, Size: 10})
			srv := httptest.NewServer(api)
			defer srv.Close()
			resp, recs := modelGet(t, srv, tt.query)
			if len(recs) != tt.want {
				t.Errorf("%d records, want %d", len(recs), tt.want)
			}
			if tt.header != "" && resp.Header.Get(tt.header) == "" {
				t.Errorf("no %s header", tt.header)
			}
			if tt.style == "link" && !strings.Contains(resp.Header.Get("Link"), "cursor=10") {
				t.Errorf("Link %q does not continue after id 10", resp.Header.Get("Link"))
			}
		})
	}
	api := NewModelAPI(Scenario{Seed: 1, Style: "cursor", N: 50, Size: 10, Behaviours: []string{"caps"}, Cap: 4})
	srv := httptest.NewServer(api)
	defer srv.Close()
	if _, recs := modelGet(t, srv, "limit=10&cursor=7"); len(recs) != 4 || recs[0].ID != 8 {
		t.Errorf("capped page after cursor 7: %v", recs)
	}
}

// An incremental window drops records changed before since; records carry
// marks on the real clock, a second apart, in the order of their ids.
func TestModelAPISince(t *testing.T) {
	api := NewModelAPI(Scenario{Seed: 1, Style: "cursor", N: 30, Size: 50, Behaviours: []string{"incremental"}})
	srv := httptest.NewServer(api)
	defer srv.Close()
	snap := api.Snapshot()
	since := snap[21].UpdatedAt
	_, recs := modelGet(t, srv, "limit=50&since="+since)
	if len(recs) != 10 || recs[0].ID != 21 {
		t.Fatalf("since %s: %d records from id %d, want 10 from 21", since, len(recs), recs[0].ID)
	}
	if !(snap[1].UpdatedAt < snap[2].UpdatedAt) {
		t.Errorf("marks not increasing: %s, %s", snap[1].UpdatedAt, snap[2].UpdatedAt)
	}
}

// Served ids are kept per position: what every response there held.
func TestModelAPIServedEverywhere(t *testing.T) {
	api := NewModelAPI(Scenario{Seed: 3, Style: "page", N: 40, Size: 10, Behaviours: []string{"updates"}, MutEvery: 1})
	srv := httptest.NewServer(api)
	defer srv.Close()
	modelGet(t, srv, "limit=10&page=2")
	modelGet(t, srv, "limit=10&page=2")
	ids, ok := api.ServedEverywhere("2")
	if !ok || len(ids) != 10 || ids[0] != 11 {
		t.Errorf("served at page 2: %v (%v)", ids, ok)
	}
	if _, ok := api.ServedEverywhere("3"); ok {
		t.Error("page 3 was never served")
	}
}
