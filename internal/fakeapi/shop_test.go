package fakeapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// newShop serves a new shop from opts for the test's lifetime.
func newShop(t *testing.T, opts ShopOptions) (*Shop, string) {
	t.Helper()
	s := NewShop(opts)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// shopBody is a shop-shape list response.
type shopBody struct {
	Data []map[string]any `json:"data"`
	Meta struct {
		Page       int     `json:"page"`
		PerPage    int     `json:"per_page"`
		Total      int     `json:"total"`
		TotalPages int     `json:"total_pages"`
		HasMore    bool    `json:"has_more"`
		NextCursor *string `json:"next_cursor"`
	} `json:"meta"`
}

// walkPages fetches base+path by page number until a short or empty page
// and returns the ids and the number of requests.
func walkPages(t *testing.T, base, path string, size int) ([]int, int) {
	t.Helper()
	var ids []int
	for page := 1; page < maxRequests; page++ {
		var b shopBody
		getJSON(t, base+path+"?page="+strconv.Itoa(page)+"&per_page="+strconv.Itoa(size), &b)
		for _, d := range b.Data {
			ids = append(ids, int(d["id"].(float64)))
		}
		if len(b.Data) < size {
			return ids, page
		}
	}
	t.Fatal("no end")
	return nil, 0
}

// walkCursor fetches base+path by cursor until next_cursor is null.
func walkCursor(t *testing.T, base, path string, size int) ([]int, int) {
	t.Helper()
	var ids []int
	cursor := ""
	for n := 1; n < maxRequests; n++ {
		var b shopBody
		getJSON(t, base+path+"?limit="+strconv.Itoa(size)+"&cursor="+cursor, &b)
		for _, d := range b.Data {
			ids = append(ids, int(d["id"].(float64)))
		}
		if b.Meta.NextCursor == nil {
			return ids, n
		}
		cursor = *b.Meta.NextCursor
	}
	t.Fatal("no end")
	return nil, 0
}

func childIDs(cs []ShopChild) []int {
	var out []int
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func TestShopWalksEveryParentAndChild(t *testing.T) {
	s, base := newShop(t, ShopOptions{Parents: 25, MaxChildren: 9, Seed: 3})
	for _, walk := range []struct {
		name string
		fn   func(*testing.T, string, string, int) ([]int, int)
	}{{"page", walkPages}, {"cursor", walkCursor}} {
		t.Run(walk.name, func(t *testing.T) {
			ids, _ := walk.fn(t, base, "/orders", 7)
			if len(ids) != 25 || ids[0] != 1 || ids[24] != 25 {
				t.Fatalf("parents %v", ids)
			}
			zero, several := 0, 0
			for _, id := range ids {
				got, reqs := walk.fn(t, base, s.ChildPath(id), 4)
				want := childIDs(s.Children(id))
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("children of %d: %v, want %v", id, got, want)
				}
				if len(want) == 0 {
					zero++
				}
				if reqs > 2 {
					several++
				}
			}
			if zero == 0 || several == 0 {
				t.Errorf("%d parents without children, %d with several pages: want some of each", zero, several)
			}
		})
	}
	if c := s.Children(1); len(c) != 0 {
		t.Errorf("parent 1 has %d children, want none", len(c))
	}
	if c := s.Children(2); len(c) != 9 {
		t.Errorf("parent 2 has %d children, want MaxChildren", len(c))
	}
}

func TestShopIsDeterministic(t *testing.T) {
	a, b := NewShop(ShopOptions{Seed: 9}), NewShop(ShopOptions{Seed: 9})
	if !reflect.DeepEqual(a.Snapshot(), b.Snapshot()) {
		t.Fatal("two shops from one seed differ")
	}
	a.AddChildren(5, 2)
	b.AddChildren(5, 2)
	a.UpdateParent(3)
	b.UpdateParent(3)
	if !reflect.DeepEqual(a.Snapshot(), b.Snapshot()) {
		t.Fatal("the same mutations on two shops from one seed differ")
	}
	if reflect.DeepEqual(a.Snapshot(), NewShop(ShopOptions{Seed: 10}).Snapshot()) {
		t.Fatal("another seed gives the same data")
	}
}

func TestShopChildMutationsTouchTheParent(t *testing.T) {
	s, base := newShop(t, ShopOptions{Parents: 5, MaxChildren: 4})
	before := s.Parents()[1] // parent 2 has 4 children
	kids := s.Children(2)
	steps := []struct {
		name string
		do   func() bool
		n    int
	}{
		{"add", func() bool { return len(s.AddChildren(2, 2)) == 2 }, 6},
		{"update", func() bool { return s.UpdateChild(2, kids[0].ID) }, 6},
		{"delete", func() bool { return s.DeleteChild(2, kids[1].ID) }, 5},
		{"touch", func() bool { return s.TouchParent(2) }, 5},
	}
	last := before.UpdatedAt
	for _, st := range steps {
		if !st.do() {
			t.Fatalf("%s: refused", st.name)
		}
		p := s.Parents()[1]
		if !p.UpdatedAt.After(last) {
			t.Errorf("%s: parent updated_at %v did not move past %v", st.name, p.UpdatedAt, last)
		}
		last = p.UpdatedAt
		if got, _ := walkPages(t, base, "/orders/2/items", 3); len(got) != st.n {
			t.Errorf("%s: %d children served, want %d", st.name, len(got), st.n)
		}
	}
	if got := s.Children(2)[0]; got.Qty == kids[0].Qty || !got.UpdatedAt.After(kids[0].UpdatedAt) {
		t.Errorf("updated child %+v, was %+v", got, kids[0])
	}
	if s.UpdateChild(2, 99999) || s.DeleteChild(99, 1) || s.TouchParent(99) || s.AddChildren(99, 1) != nil {
		t.Error("a mutation of something missing reported success")
	}
	added := s.AddParents(2, 3)
	if len(added) != 2 || added[0].ID != 6 || added[1].ID != 7 || len(s.Parents()) != 7 {
		t.Errorf("added parents %+v", added)
	}
}

func TestShopUpdatedSinceSelectsChangedParents(t *testing.T) {
	s, base := newShop(t, ShopOptions{Parents: 10})
	mark := s.Parents()[9].UpdatedAt.Add(time.Second)
	s.UpdateParent(4)
	s.AddChildren(7, 1)
	var b shopBody
	getJSON(t, base+"/orders?updated_since="+mark.Format(time.RFC3339), &b)
	if len(b.Data) != 2 || b.Data[0]["id"].(float64) != 4 || b.Data[1]["id"].(float64) != 7 {
		t.Fatalf("changed since %v: %v", mark, b.Data)
	}
}

func TestShopNotFoundFailingAndCounters(t *testing.T) {
	s, base := newShop(t, ShopOptions{Parents: 5, NotFound: []int{3}})
	if resp, body := get(t, base+"/orders/3/items"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("children of parent 3: %d %s, want 404", resp.StatusCode, body)
	}
	if resp, _ := get(t, base+"/orders/9/items"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("children of a missing parent: %d, want 404", resp.StatusCode)
	}
	s.SetNotFound(3, false)
	if resp, _ := get(t, base+"/orders/3/items"); resp.StatusCode != http.StatusOK {
		t.Errorf("children of parent 3 after SetNotFound off: %d", resp.StatusCode)
	}
	s.SetFailing("/customers", http.StatusServiceUnavailable)
	if resp, _ := get(t, base+"/customers"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("failing customers: %d", resp.StatusCode)
	}
	s.SetFailing("/customers", 0)
	var b shopBody
	getJSON(t, base+"/customers", &b)
	if len(b.Data) != 10 || b.Data[0]["email"] != "c1@example.com" {
		t.Errorf("customers: %v", b.Data)
	}
	if s.ChildRequests(3) != 2 || s.Requests("/customers") != 2 || s.TotalRequests() != 5 {
		t.Errorf("counted %d, %d, %d requests; want 2, 2, 5", s.ChildRequests(3), s.Requests("/customers"), s.TotalRequests())
	}
	if log := s.RequestLog(); len(log) != 5 || log[1].Path != "/orders/9/items" {
		t.Errorf("request log %+v", log)
	}
	s.ResetCounters()
	if s.TotalRequests() != 0 || s.ChildRequests(3) != 0 {
		t.Error("ResetCounters left counts")
	}
}

func TestShopFaultsAndLatency(t *testing.T) {
	s, base := newShop(t, ShopOptions{Parents: 3, Faults: Faults{Rate: 1, Kinds: []string{Fault503}, Limit: 2}})
	for i, want := range []int{503, 503, 200} {
		if resp, _ := get(t, base+"/orders"); resp.StatusCode != want {
			t.Errorf("request %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
	if s.Faults() != 2 {
		t.Errorf("%d faults counted, want 2", s.Faults())
	}
	s.SetLatency(60 * time.Millisecond)
	t0 := time.Now()
	get(t, base+"/orders")
	if d := time.Since(t0); d < 60*time.Millisecond {
		t.Errorf("request took %v with 60ms latency", d)
	}
	if s.MaxInFlight() != 1 {
		t.Errorf("MaxInFlight %d after requests one at a time", s.MaxInFlight())
	}
	done := make(chan struct{})
	for range 3 {
		go func() {
			if resp, err := http.Get(base + "/orders/2/items"); err == nil {
				resp.Body.Close()
			}
			done <- struct{}{}
		}()
	}
	for range 3 {
		<-done
	}
	if s.MaxInFlight() != 3 {
		t.Errorf("MaxInFlight %d after three requests at once (60ms each)", s.MaxInFlight())
	}
}

var nextLink = regexp.MustCompile(`<([^>]+)>; rel="next"`)

func TestShopGitHubShape(t *testing.T) {
	s, base := newShop(t, ShopOptions{Shape: ShapeGitHub, Parents: 12, MaxChildren: 7, Seed: 1})
	walk := func(url string) (ids []int, first map[string]any) {
		for n := 0; url != ""; n++ {
			if n > 100 {
				t.Fatal("no end")
			}
			resp, body := get(t, url)
			var data []map[string]any
			if err := json.Unmarshal(body, &data); err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET %s: %d %v %s", url, resp.StatusCode, err, body)
			}
			for _, d := range data {
				if first == nil {
					first = d
				}
				ids = append(ids, int(d["id"].(float64)))
			}
			url = ""
			if m := nextLink.FindStringSubmatch(resp.Header.Get("Link")); m != nil {
				url = m[1]
			}
		}
		return ids, first
	}
	repos, first := walk(base + "/repos?per_page=5")
	if len(repos) != 12 || first["full_name"] != "org2/repo-1" || first["owner"].(map[string]any)["login"] != "org2" {
		t.Fatalf("repos %v, first %v", repos, first)
	}
	if org, _ := walk(base + "/orgs/org1/repos"); len(org) != 4 || org[0] != 3 {
		t.Errorf("repos of org1: %v, want 3, 6, 9, 12", org)
	}
	if p := s.ChildPath(2); p != "/repos/org3/repo-2/issues" {
		t.Fatalf("ChildPath(2) = %q", p)
	}
	for _, id := range repos {
		got, _ := walk(base + s.ChildPath(id) + "?per_page=3")
		if want := childIDs(s.Children(id)); !reflect.DeepEqual(got, want) {
			t.Fatalf("issues of repo %d: %v, want %v", id, got, want)
		}
	}
	if _, issue := walk(base + s.ChildPath(2)); issue["number"].(float64) != 1 || issue["title"] == "" {
		t.Errorf("issue %v", issue)
	}
}
