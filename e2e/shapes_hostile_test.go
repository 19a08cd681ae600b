package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"
)

// pagination.has_more reads a boolean. A path that selects an object (the
// pageInfo, not its hasNextPage) or a value no boolean reads ("yes") is
// not a false has_more: it must not end a walk whose cursor goes on with
// exit 0 and one page of 57 orders (docs/pagination.md, "Common to all
// styles").
func TestHasMoreNotABoolean(t *testing.T) {
	for _, c := range []struct{ name, path, want string }{
		{"object", "data.orders.pageInfo", "is an object"},
		{"string", "data.orders.note", `"yes"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, _, _ := gqlServer(t, 57, 0)
			wrapped := url
			if c.name == "string" {
				// The API says "yes" where a boolean belongs.
				wrapped = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					resp, err := http.Post(url, "application/json", r.Body)
					if err != nil {
						http.Error(w, err.Error(), 502)
						return
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					var m map[string]any
					_ = json.Unmarshal(b, &m)
					m["data"].(map[string]any)["orders"].(map[string]any)["note"] = "yes"
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(m)
				}))
			}
			dir := t.TempDir()
			spec := strings.Replace(gqlJob(wrapped, "sqlite:out.db"), "has_more: data.orders.pageInfo.hasNextPage", "has_more: "+c.path, 1)
			job := writeJob(t, dir, "job.yaml", spec)
			r := idemsync(t, dir, nil, "run", job)
			if r.code == 0 {
				n := len(readItems(t, filepath.Join(dir, "out.db"), "", ""))
				t.Fatalf("exit 0 with %d of 57 orders: has_more %s ended the walk", n, c.path)
			}
			if !strings.Contains(r.stderr, c.path) || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, want an error naming %s and %s:\n%s", r.code, c.path, c.want, r.stderr)
			}
		})
	}
}

// A cursor that is a JSON string is sent back as that string, even when
// its text looks like JSON ("[\"2024-01-01\",10]"): only a cursor that is
// a JSON array or object goes into the body as JSON (docs/pagination.md,
// "Where the position goes"). The checkpoint keeps which it was, so a
// resumed run sends the same body.
func TestBodyCursorStringLooksLikeJSON(t *testing.T) {
	const n = 25
	var mu sync.Mutex
	var sent []string
	var failAt20 atomic.Bool
	failAt20.Store(true)
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c := gjson.GetBytes(b, "filter.after")
		mu.Lock()
		sent = append(sent, c.Raw)
		mu.Unlock()
		after := 0
		if failAt20.Load() && c.Str == `["k",20]` {
			http.Error(w, `{"message":"unavailable"}`, 503)
			return
		}
		switch c.Type {
		case gjson.Null:
		case gjson.String:
			if _, err := fmt.Sscanf(c.Str, `["k",%d]`, &after); err != nil {
				http.Error(w, `{"message":"bad cursor"}`, 400)
				return
			}
		default:
			http.Error(w, `{"message":"after must be a string"}`, 400)
			return
		}
		var items []string
		for i := after + 1; i <= min(after+10, n); i++ {
			items = append(items, fmt.Sprintf(`{"id":%d,"name":"order %d"}`, i, i))
		}
		next := "null"
		if after+10 < n {
			cur, _ := json.Marshal(fmt.Sprintf(`["k",%d]`, after+10))
			next = string(cur)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"items":[%s],"next":%s}`, strings.Join(items, ","), next)
	}))
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: strcur
source:
  url: %s
  method: POST
  body: {filter: {after: null}}
  records: items
pagination:
  style: cursor
  next: next
  in: body
  param: filter.after
retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url))
	// The third page fails (exit 3): the checkpoint holds the string cursor.
	if r := idemsync(t, dir, nil, "run", job); r.code != 3 {
		t.Fatalf("exit %d, want 3 (page 3 unavailable); cursors sent %q\n%s", r.code, sent, r.stderr)
	}
	failAt20.Store(false)
	r := idemsync(t, dir, nil, "run", job)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0; cursors sent %q\n%s", r.code, sent, r.stderr)
	}
	assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), wantItems(n, func(i int) string { return fmt.Sprintf("order %d", i) }))
	want := []string{"null", `"[\"k\",10]"`, `"[\"k\",20]"`, `"[\"k\",20]"`, `"[\"k\",20]"`} // two attempts, then the resumed run
	if strings.Join(sent, " ") != strings.Join(want, " ") {
		t.Errorf("filter.after sent %q, want %q", sent, want)
	}
}
