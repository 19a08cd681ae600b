package fakeapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// newServer serves a new API from opts on an httptest server closed at the
// end of the test.
func newServer(t *testing.T, opts Options) (*API, *httptest.Server) {
	t.Helper()
	a := New(opts)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return a, srv
}

// get fetches rawURL and returns the response with its whole body.
func get(t *testing.T, rawURL string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(rawURL)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", rawURL, err)
	}
	return resp, body
}

// getJSON fetches rawURL, requires 200 and decodes the body into v.
func getJSON(t *testing.T, rawURL string, v any) *http.Response {
	t.Helper()
	resp, body := get(t, rawURL)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", rawURL, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: decode: %v: %s", rawURL, err, body)
	}
	return resp
}

// withQuery returns base+path with q's parameters and extra added.
func withQuery(base, path string, q url.Values, extra ...string) string {
	v := url.Values{}
	for k, vs := range q {
		v[k] = append([]string(nil), vs...)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	if len(v) == 0 {
		return base + path
	}
	return base + path + "?" + v.Encode()
}

// maxRequests bounds every pager so a pagination bug fails instead of looping.
const maxRequests = 10000

// pager walks one route from its first page to its end and returns every
// record it received, in order. q holds extra query parameters (size,
// updated_since).
type pager func(t *testing.T, base string, q url.Values) []Record

func pageByNumber(t *testing.T, base string, q url.Values) []Record {
	t.Helper()
	var out []Record
	for page := 1; page < maxRequests; page++ {
		var body struct {
			Data []Record `json:"data"`
			Meta struct {
				HasMore bool `json:"has_more"`
			} `json:"meta"`
		}
		getJSON(t, withQuery(base, "/page", q, "page", strconv.Itoa(page)), &body)
		out = append(out, body.Data...)
		if !body.Meta.HasMore {
			return out
		}
	}
	t.Fatal("page: no end")
	return nil
}

func pageByOffset(t *testing.T, base string, q url.Values) []Record {
	t.Helper()
	var out []Record
	for range maxRequests {
		var body struct {
			Data  []Record `json:"data"`
			Total int      `json:"total"`
		}
		getJSON(t, withQuery(base, "/offset", q, "offset", strconv.Itoa(len(out))), &body)
		if len(body.Data) == 0 {
			return out
		}
		out = append(out, body.Data...)
	}
	t.Fatal("offset: no end")
	return nil
}

func pageByCursor(t *testing.T, base string, q url.Values) []Record {
	t.Helper()
	var out []Record
	cursor := ""
	for range maxRequests {
		var body struct {
			Data []Record `json:"data"`
			Next *string  `json:"next_cursor"`
		}
		getJSON(t, withQuery(base, "/cursor", q, "cursor", cursor), &body)
		out = append(out, body.Data...)
		if body.Next == nil {
			return out
		}
		cursor = *body.Next
	}
	t.Fatal("cursor: no end")
	return nil
}

func pageByCursorURL(t *testing.T, base string, q url.Values) []Record {
	t.Helper()
	var out []Record
	next := withQuery(base, "/cursor-url", q)
	for range maxRequests {
		var body struct {
			Data  []Record `json:"data"`
			Links struct {
				Next *string `json:"next"`
			} `json:"links"`
		}
		getJSON(t, next, &body)
		out = append(out, body.Data...)
		if body.Links.Next == nil {
			return out
		}
		next = *body.Links.Next
	}
	t.Fatal("cursor-url: no end")
	return nil
}

func pageByCursorHeader(t *testing.T, base string, q url.Values) []Record {
	t.Helper()
	var out []Record
	cursor := ""
	for range maxRequests {
		var data []Record
		resp := getJSON(t, withQuery(base, "/cursor-header", q, "cursor", cursor), &data)
		out = append(out, data...)
		if _, ok := resp.Header["X-Next-Cursor"]; !ok {
			return out
		}
		cursor = resp.Header.Get("X-Next-Cursor")
	}
	t.Fatal("cursor-header: no end")
	return nil
}

// linkNext matches the rel="next" entry of a Link header.
var linkNext = regexp.MustCompile(`<([^>]*)>;\s*rel="next"`)

func pageByLink(t *testing.T, base string, q url.Values) []Record {
	t.Helper()
	var out []Record
	next := withQuery(base, "/link", q)
	for range maxRequests {
		var data []Record
		resp := getJSON(t, next, &data)
		out = append(out, data...)
		m := linkNext.FindStringSubmatch(resp.Header.Get("Link"))
		if m == nil {
			return out
		}
		next = m[1]
		if strings.HasPrefix(next, "/") {
			next = base + next
		}
	}
	t.Fatal("link: no end")
	return nil
}

func pageAll(t *testing.T, base string, q url.Values) []Record {
	t.Helper()
	var data []Record
	getJSON(t, withQuery(base, "/all", q), &data)
	return data
}

// pageByHWM is a keyset client: since starts empty and becomes each page's
// max updated_at. Records at exactly the mark come back on the next page
// (the API returns >=); they are dropped here, and the test fails if any
// other record comes back twice or a full page makes no progress.
func pageByHWM(t *testing.T, base string, q url.Values) []Record {
	t.Helper()
	limit := 50
	if s := q.Get("limit"); s != "" {
		limit, _ = strconv.Atoi(s)
	}
	var out []Record
	seen := map[int]bool{}
	since := ""
	for range maxRequests {
		var body struct {
			Data []Record `json:"data"`
		}
		getJSON(t, withQuery(base, "/hwm", q, "since", since), &body)
		for _, r := range body.Data {
			if seen[r.ID] {
				if r.UpdatedAt.Format(time.RFC3339) != since {
					t.Fatalf("hwm: record %d repeated away from the boundary %s", r.ID, since)
				}
				continue
			}
			seen[r.ID] = true
			out = append(out, r)
		}
		if len(body.Data) < limit {
			return out
		}
		mark := body.Data[len(body.Data)-1].UpdatedAt.Format(time.RFC3339)
		if mark == since {
			t.Fatalf("hwm: full page with no progress at %s", since)
		}
		since = mark
	}
	t.Fatal("hwm: no end")
	return nil
}
