package fakeapi

import (
	"net/http"
	"strings"
	"testing"
)

func TestQuirksPageCap(t *testing.T) {
	_, srv := newServer(t, Options{Records: 100, Quirks: Quirks{PageCap: 25, TotalHeader: "X-Total-Count"}})
	var body struct {
		Data []Record `json:"data"`
		Meta struct {
			PerPage    int `json:"per_page"`
			TotalPages int `json:"total_pages"`
		} `json:"meta"`
	}
	resp := getJSON(t, srv.URL+"/page?page=2&per_page=100", &body)
	if len(body.Data) != 25 || body.Data[0].ID != 26 || body.Meta.TotalPages != 4 {
		t.Errorf("capped page 2: %d records from id %d, %d pages; want 25 from 26 of 4 pages", len(body.Data), body.Data[0].ID, body.Meta.TotalPages)
	}
	if got := resp.Header.Get("X-Total-Count"); got != "100" {
		t.Errorf("X-Total-Count %q, want 100", got)
	}
	var off struct {
		Data []Record `json:"data"`
	}
	getJSON(t, srv.URL+"/offset?offset=10&limit=100", &off)
	if len(off.Data) != 25 || off.Data[0].ID != 11 {
		t.Errorf("capped offset page: %d records", len(off.Data))
	}
}

func TestQuirksLies(t *testing.T) {
	no := false
	a, srv := newServer(t, Options{Records: 100, Quirks: Quirks{Lies: []Lie{
		{Path: "/page", Param: "page", Value: "2"},
		{Path: "/page", Param: "page", Value: "3", Keep: 10, Times: 2},
		{Path: "/page", Param: "page", Value: "1", HasMore: &no, Keep: 25},
		{Path: "/offset", Param: "offset", Value: "0", Status: http.StatusNoContent},
		{Path: "/link", Param: "page", Value: "1", Body: "<html>login</html>", ContentType: "text/html"},
	}}})
	var body struct {
		Data []Record `json:"data"`
		Meta struct {
			TotalPages int  `json:"total_pages"`
			HasMore    bool `json:"has_more"`
		} `json:"meta"`
	}
	getJSON(t, srv.URL+"/page?page=2&per_page=10", &body)
	if len(body.Data) != 0 || body.Meta.TotalPages != 10 || !body.Meta.HasMore {
		t.Errorf("lying page 2: %d records, meta %+v; want empty with the metadata intact", len(body.Data), body.Meta)
	}
	getJSON(t, srv.URL+"/page?page=2&per_page=10", &body)
	if len(body.Data) != 10 {
		t.Errorf("page 2 after its one lie: %d records", len(body.Data))
	}
	for i, want := range []int{10, 10, 25} {
		getJSON(t, srv.URL+"/page?page=3&per_page=25", &body)
		if len(body.Data) != want {
			t.Errorf("page 3, request %d: %d records, want %d", i+1, len(body.Data), want)
		}
	}
	getJSON(t, srv.URL+"/page?page=1&per_page=25", &body)
	if len(body.Data) != 25 || body.Meta.HasMore {
		t.Errorf("page 1: %d records, has_more %v; want a full page saying has_more false", len(body.Data), body.Meta.HasMore)
	}
	resp, raw := get(t, srv.URL+"/offset?offset=0")
	if resp.StatusCode != http.StatusNoContent || len(raw) != 0 {
		t.Errorf("offset 0: %d %q, want 204 with no body", resp.StatusCode, raw)
	}
	resp, raw = get(t, srv.URL+"/link?page=1")
	if resp.StatusCode != 200 || !strings.HasPrefix(string(raw), "<html>") || resp.Header.Get("Content-Type") != "text/html" {
		t.Errorf("link page 1: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	if n := a.LiesTold(); n != 6 {
		t.Errorf("%d lies told, want 6", n)
	}
}
