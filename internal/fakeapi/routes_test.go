package fakeapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// keysOf decodes a JSON object and returns its sorted keys.
func keysOf(t *testing.T, raw []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %v: %s", err, raw)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func field(t *testing.T, raw []byte, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %v: %s", err, raw)
	}
	return string(m[name])
}

func TestRecordJSON(t *testing.T) {
	_, srv := newServer(t, Options{})
	_, body := get(t, srv.URL+"/all")
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || len(raw) != 1000 {
		t.Fatalf("decode /all: %v, %d records", err, len(raw))
	}
	shape := regexp.MustCompile(`^\{"id":(\d+),"name":"Customer \d+","customer":\{"email":"c\d+@example\.com"\},` +
		`"total":\d+\.\d\d,"active":(true|false),"updated_at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ",` +
		`"tags":\[("[a-z]+"(,"[a-z]+")*)?\]\}$`)
	for _, r := range raw {
		if !shape.Match(r) {
			t.Fatalf("record does not have the documented shape: %s", r)
		}
	}
	if !strings.Contains(string(raw[0]), `"updated_at":"2024-01-01T00:00:01Z"`) {
		t.Fatalf("record 1: %s", raw[0])
	}
}

func TestResponseShapes(t *testing.T) {
	_, srv := newServer(t, Options{Records: 25})
	u := srv.URL

	_, body := get(t, u+"/page?page=3&per_page=10")
	if k := keysOf(t, body); !slices.Equal(k, []string{"data", "meta"}) {
		t.Fatalf("/page keys %v", k)
	}
	if m := field(t, body, "meta"); m != `{"page":3,"per_page":10,"total":25,"total_pages":3,"has_more":false}` {
		t.Fatalf("/page meta %s", m)
	}
	_, body = get(t, u+"/page?page=4&per_page=10")
	if d := field(t, body, "data"); d != "[]" {
		t.Fatalf("/page past the end: data %s", d)
	}

	_, body = get(t, u+"/page?page=1073741824&per_page=10000")
	if d, m := field(t, body, "data"), field(t, body, "meta"); d != "[]" || !strings.Contains(m, `"has_more":false`) {
		t.Fatalf("/page far past the end: %s", body)
	}

	_, body = get(t, u+"/offset?offset=30&limit=10")
	if k := keysOf(t, body); !slices.Equal(k, []string{"data", "total"}) || field(t, body, "total") != "25" || field(t, body, "data") != "[]" {
		t.Fatalf("/offset past the end: %s", body)
	}

	_, body = get(t, u+"/cursor?limit=20")
	var c struct {
		NextCursor *string `json:"next_cursor"`
	}
	_ = json.Unmarshal(body, &c)
	if k := keysOf(t, body); !slices.Equal(k, []string{"data", "next_cursor"}) || c.NextCursor == nil {
		t.Fatalf("/cursor first page: %s", body)
	}
	_, body = get(t, u+"/cursor?limit=20&cursor="+*c.NextCursor)
	if n := field(t, body, "next_cursor"); n != "null" {
		t.Fatalf("/cursor last page next_cursor = %s", n)
	}

	_, body = get(t, u+"/cursor-url?limit=20&updated_since=2024-01-01T00:00:00Z")
	var cu struct{ Links struct{ Next *string } }
	_ = json.Unmarshal(body, &cu)
	if cu.Links.Next == nil || !strings.HasPrefix(*cu.Links.Next, u+"/cursor-url?cursor=") ||
		!strings.Contains(*cu.Links.Next, "&limit=20&updated_since=2024-01-01T00%3A00%3A00Z") {
		t.Fatalf("/cursor-url next: %s", body)
	}
	if strings.Contains(string(body), `\u0026`) {
		t.Fatalf("/cursor-url escapes '&': %s", body)
	}
	_, body = get(t, *cu.Links.Next)
	if l := field(t, body, "links"); l != `{"next":null}` {
		t.Fatalf("/cursor-url last links %s", l)
	}

	resp, body := get(t, u+"/cursor-header?limit=25")
	if _, ok := resp.Header["X-Next-Cursor"]; ok || !strings.HasPrefix(string(body), "[{") {
		t.Fatalf("/cursor-header single page: header %q body %.20s", resp.Header.Get("X-Next-Cursor"), body)
	}

	_, body = get(t, u+"/hwm?limit=5")
	if k := keysOf(t, body); !slices.Equal(k, []string{"data"}) {
		t.Fatalf("/hwm keys %v", k)
	}
}

func TestLinkHeader(t *testing.T) {
	_, srv := newServer(t, Options{Records: 100})
	host := strings.TrimPrefix(srv.URL, "http://")
	cases := []struct{ query, want string }{
		{"page=1&per_page=10", `<http://H/link?page=1&per_page=10>; rel="first", <http://H/link?page=2&per_page=10>; rel="next", <http://H/link?page=10&per_page=10>; rel="last"`},
		{"page=10&per_page=10", `<http://H/link?page=1&per_page=10>; rel="first", <http://H/link?page=9&per_page=10>; rel="prev", <http://H/link?page=10&per_page=10>; rel="last"`},
		{"page=2&per_page=50&relative=1", `</link?page=1&per_page=50&relative=1>; rel="first", </link?page=1&per_page=50&relative=1>; rel="prev", </link?page=2&per_page=50&relative=1>; rel="last"`},
		{"per_page=60", `<http://H/link?page=1&per_page=60>; rel="first", <http://H/link?page=2&per_page=60>; rel="next", <http://H/link?page=2&per_page=60>; rel="last"`},
	}
	for _, c := range cases {
		resp, _ := get(t, srv.URL+"/link?"+c.query)
		if got, want := resp.Header.Get("Link"), strings.ReplaceAll(c.want, "H", host); got != want {
			t.Errorf("%s:\n got  %s\n want %s", c.query, got, want)
		}
	}
}

func TestBadRequests(t *testing.T) {
	_, srv := newServer(t, Options{Records: 10})
	for _, path := range []string{
		"/page?page=0", "/page?per_page=abc", "/page?per_page=10001", "/link?page=-1",
		"/offset?offset=-1", "/offset?limit=0", "/cursor?cursor=!!", "/cursor-url?cursor=eA",
		"/hwm?since=yesterday", "/all?updated_since=2024-13-01T00:00:00Z",
		"/redirect", "/redirect?to=/x&status=200",
	} {
		resp, body := get(t, srv.URL+path)
		if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(string(body), `{"error":{"message":"`) {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	resp, _ := get(t, srv.URL+"/nope")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/nope: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/page", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /page: %v %v", resp, err)
	}
}

func TestTokenAndHeaders(t *testing.T) {
	a, srv := newServer(t, Options{Records: 10, Token: "s3cret"})
	for _, auth := range []string{"", "Bearer wrong", "s3cret"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/all", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: status %d", auth, resp.StatusCode)
		}
	}
	if a.SeenHeader("X-Api-Key") {
		t.Fatal("SeenHeader before any X-Api-Key")
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/page", strings.NewReader(`{"q":1}`))
	req.Header.Set("Authorization", "Bearer s3cret")
	req.Header.Set("x-api-key", "k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("authorized POST: %v %v", resp, err)
	}
	resp.Body.Close()
	if h := a.LastHeaders(); h.Get("Authorization") != "Bearer s3cret" || !a.SeenHeader("X-API-KEY") {
		t.Fatalf("LastHeaders %v", h)
	}
	if string(a.LastBody()) != `{"q":1}` {
		t.Fatalf("LastBody %q", a.LastBody())
	}
	if a.Requests("/all") != 3 || a.Requests("/page") != 1 || a.TotalRequests() != 4 {
		t.Fatalf("counters: /all %d /page %d total %d", a.Requests("/all"), a.Requests("/page"), a.TotalRequests())
	}
	a.ResetCounters()
	if a.TotalRequests() != 0 || a.LastHeaders() != nil || a.SeenHeader("Authorization") {
		t.Fatal("ResetCounters left state behind")
	}
}

func TestRedirect(t *testing.T) {
	target, dst := newServer(t, Options{Records: 3})
	_, src := newServer(t, Options{Records: 3})
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		query  string
		status int
	}{{"", http.StatusFound}, {"&status=307", http.StatusTemporaryRedirect}, {"&status=301", http.StatusMovedPermanently}} {
		resp, err := noFollow.Get(src.URL + "/redirect?to=" + dst.URL + "/all" + c.query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("Location") != dst.URL+"/all" {
			t.Errorf("%q: %d to %q", c.query, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp, _ := get(t, src.URL+"/redirect?to="+dst.URL+"/all")
	if resp.StatusCode != http.StatusOK || target.Requests("/all") != 1 {
		t.Fatalf("followed redirect: %d, target saw %d", resp.StatusCode, target.Requests("/all"))
	}
}

func TestLatencyRespectsCancellation(t *testing.T) {
	a, srv := newServer(t, Options{Records: 3, Latency: 20 * time.Millisecond})
	start := time.Now()
	get(t, srv.URL+"/all")
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("latency not applied")
	}
	a.SetLatency(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/all", nil)
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
	// The handler itself returns as soon as its request is cancelled,
	// without writing anything.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		a.ServeHTTP(rec, httptest.NewRequestWithContext(cctx, http.MethodGet, "/all", nil))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("handler did not return after cancellation")
	}
	if rec.Body.Len() != 0 {
		t.Fatalf("cancelled request got a body: %.40s", rec.Body.String())
	}
}
