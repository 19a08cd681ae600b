package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
						http.Error(w, err.Error(), http.StatusBadGateway)
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
			http.Error(w, `{"message":"unavailable"}`, http.StatusServiceUnavailable)
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

// gqlShaped serves 30 orders as a GraphQL connection, ten a page, at the
// cursor in variables.after ("c"+the last id, null first); edit rewrites
// the answer to the page after that cursor (0 for the first) before it
// is sent. It returns the URL and the cursors sent (as raw JSON).
func gqlShaped(t *testing.T, edit func(after int, resp map[string]any)) (string, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var sent []string
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c := gjson.GetBytes(b, "variables.after")
		mu.Lock()
		sent = append(sent, c.Raw)
		mu.Unlock()
		after := 0
		if c.Type != gjson.Null {
			var err error // "c20", or "20" when the API gave the number 20
			if after, err = strconv.Atoi(strings.TrimPrefix(c.String(), "c")); err != nil {
				fmt.Fprintf(w, `{"errors":[{"message":"invalid cursor","extensions":{"code":"BAD_USER_INPUT"}}],"data":null}`)
				return
			}
		}
		nodes := []any{}
		for i := after + 1; i <= min(after+10, 30); i++ {
			nodes = append(nodes, map[string]any{"id": i, "name": fmt.Sprintf("order %d", i)})
		}
		info := map[string]any{"hasNextPage": after+10 < 30, "endCursor": nil}
		if len(nodes) > 0 {
			info["endCursor"] = fmt.Sprintf("c%d", min(after+10, 30))
		}
		resp := map[string]any{"data": map[string]any{"orders": map[string]any{"nodes": nodes, "pageInfo": info}}}
		if edit != nil {
			edit(after, resp)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}))
	return url, &sent
}

// Answers that do not prove their page are never taken as one: whatever
// page 2 of a GraphQL walk says, a run exits 0 only with all 30 orders.
func TestGraphQLPageTwoShapes(t *testing.T) {
	info := func(r map[string]any) map[string]any {
		return r["data"].(map[string]any)["orders"].(map[string]any)["pageInfo"].(map[string]any)
	}
	conn := func(r map[string]any) map[string]any { return r["data"].(map[string]any)["orders"].(map[string]any) }
	for _, c := range []struct {
		name string
		edit func(r map[string]any)
		code int
		want string
	}{
		{"partial data", func(r map[string]any) {
			r["errors"] = []any{map[string]any{"message": "node 14 failed", "path": []any{"orders", "nodes", 3}}}
		}, 3, "error payload at errors"},
		{"data null", func(r map[string]any) {
			r["data"] = nil
			r["errors"] = []any{map[string]any{"message": "timeout"}}
		}, 3, "errors"},
		{"data null, no errors", func(r map[string]any) { r["data"] = nil }, 1, "data.orders.nodes"},
		{"empty errors", func(r map[string]any) { r["errors"] = []any{} }, 0, ""},
		{"errors under extensions", func(r map[string]any) {
			r["extensions"] = map[string]any{"warnings": []any{"slow"}}
		}, 0, ""},
		{"more, no cursor", func(r map[string]any) { info(r)["endCursor"] = nil; info(r)["hasNextPage"] = true }, 3, "hasNextPage is true"},
		{"more, repeated cursor", func(r map[string]any) { info(r)["endCursor"] = "c10"; info(r)["hasNextPage"] = true }, 1, "second time"},
		{"more, repeated cursor, one node", func(r map[string]any) {
			conn(r)["nodes"] = conn(r)["nodes"].([]any)[:1]
			info(r)["endCursor"] = "c10"
			info(r)["hasNextPage"] = true
		}, 3, "hasNextPage is true"},
		{"no hasNextPage", func(r map[string]any) { delete(info(r), "hasNextPage") }, 0, ""},
		// A cursor that is a number on one page and a string on the next:
		// the number goes back as a string ("20"), as the docs say.
		{"numeric cursor", func(r map[string]any) { info(r)["endCursor"] = 20 }, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, sent := gqlShaped(t, func(after int, r map[string]any) {
				if after == 10 {
					c.edit(r)
				}
			})
			dir := t.TempDir()
			spec := strings.Replace(gqlJob(url, "sqlite:out.db"), "retry: {attempts: 4", "retry: {attempts: 2", 1)
			job := writeJob(t, dir, "job.yaml", spec)
			r := idemsync(t, dir, nil, "run", job)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, want %d naming %q; sent %q\n%s", r.code, c.code, c.want, *sent, r.stderr)
			}
			got := readItems(t, filepath.Join(dir, "out.db"), "", "")
			if r.code == 0 {
				assertItems(t, got, wantItems(30, func(i int) string { return fmt.Sprintf("order %d", i) }))
			} else if len(got) > 10 {
				t.Errorf("%d rows after exit %d: page 2 was committed", len(got), r.code)
			}
		})
	}
}

// A cursor that goes in a header (pagination.in: header) is sent as the
// API gave it when a header can carry it (non-ASCII included); one holding
// a line break cannot be sent: the run stops at once with exit 1 naming
// the header, after committing the pages before it, instead of retrying a
// request that cannot be made.
func TestHeaderCursorBytes(t *testing.T) {
	for _, c := range []struct {
		name, cursor string
		code         int
	}{
		{"non-ASCII", "café-10", 0},
		{"CRLF", "c10\r\nX-Evil: 1", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var sent []string
			url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got := r.Header.Get("X-Cursor")
				mu.Lock()
				sent = append(sent, got)
				mu.Unlock()
				if r.Header.Get("X-Evil") != "" {
					t.Errorf("the cursor injected a header")
				}
				body := `{"items":[{"id":1,"name":"order 1"}],"next":` + strconv.Quote(c.cursor) + `}`
				if got != "" {
					body = `{"items":[{"id":2,"name":"order 2"}],"next":null}`
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, body)
			}))
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: hdr
source: {url: %s, records: items}
pagination: {style: cursor, next: next, in: header, param: X-Cursor}
retry: {attempts: 3, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url))
			r := idemsync(t, dir, nil, "run", job)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d; sent %q\n%s", r.code, c.code, sent, r.stderr)
			}
			if c.code == 0 {
				if len(sent) != 2 || sent[1] != c.cursor {
					t.Errorf("X-Cursor sent %q, want the cursor %q on the second request", sent, c.cursor)
				}
				return
			}
			if strings.Contains(r.stderr, "\nX-Evil") {
				t.Errorf("the cursor's line break starts a line of its own on stderr:\n%s", r.stderr)
			}
			if len(sent) != 1 || !strings.Contains(r.stderr, "X-Cursor") {
				t.Errorf("%d requests (want 1: the second cannot be sent), stderr should name X-Cursor:\n%s", len(sent), r.stderr)
			}
		})
	}
}

// A POST whose connection is reset is sent again byte for byte, and a run
// SIGKILLed while it waits for a page sends that page's body, byte for
// byte, when the next run resumes: the checkpoint holds the exact position
// (a cursor that is JSON text, here) and the body is rebuilt from the job.
func TestBodyBytesAcrossResetAndKill(t *testing.T) {
	const n = 30
	var mu sync.Mutex
	bodies := map[string][]string{} // the bodies sent for each cursor
	var reset, block atomic.Bool
	reset.Store(true)
	block.Store(true)
	waiting := make(chan struct{}, 1)
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c := gjson.GetBytes(b, "q.page.after")
		mu.Lock()
		bodies[c.Raw] = append(bodies[c.Raw], string(b))
		mu.Unlock()
		if c.Str == `{"k":10}` && reset.CompareAndSwap(true, false) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // reset mid-request
			return
		}
		if c.Str == `{"k":20}` && block.Load() {
			waiting <- struct{}{}
			<-r.Context().Done() // until the client dies
			return
		}
		after := 0
		if c.Type == gjson.String {
			fmt.Sscanf(c.Str, `{"k":%d}`, &after)
		}
		var items []string
		for i := after + 1; i <= min(after+10, n); i++ {
			items = append(items, fmt.Sprintf(`{"id":%d,"name":"order %d"}`, i, i))
		}
		next := "null"
		if after+10 < n {
			cur, _ := json.Marshal(fmt.Sprintf(`{"k":%d}`, after+10))
			next = string(cur)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"items":[%s],"next":%s}`, strings.Join(items, ","), next)
	}))
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: bytes
source:
  url: %s
  method: POST
  body: {z: 1, q: {tenant: "${TENANT}", page: {after: null, size: 10}, é: "ü"}, a: [3, 1]}
  records: items
pagination: {style: cursor, next: next, in: body, param: q.page.after}
retry: {attempts: 3, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url))
	env := []string{"TENANT=acme"}
	c := exec.Command(binary, "run", job)
	c.Dir = dir
	c.Env = append(testEnv(dir, "run", job), env...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _, _ = c.Process.Wait() })
	select {
	case <-waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never asked for the third page")
	}
	_ = c.Process.Kill() // SIGKILL
	_, _ = c.Process.Wait()
	block.Store(false)
	runCode(t, dir, env, 0, "run", job)
	assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), wantItems(n, func(i int) string { return fmt.Sprintf("order %d", i) }))
	mu.Lock()
	defer mu.Unlock()
	for cur, bs := range bodies {
		for _, b := range bs[1:] {
			if b != bs[0] {
				t.Errorf("cursor %s: bodies differ:\n%s\n%s", cur, bs[0], b)
			}
		}
	}
	// The reset page: sent twice by the first run, once more by the next
	// when the kill came before its commit (the third page is fetched
	// while the second commits).
	if k := `"{\"k\":10}"`; len(bodies[k]) < 2 || len(bodies[k]) > 3 {
		t.Errorf("the reset page was sent %d time(s), want 2 or 3", len(bodies[k]))
	}
	if k := `"{\"k\":20}"`; len(bodies[k]) != 2 || !strings.Contains(bodies[k][0], `"tenant":"acme"`) {
		t.Errorf("the page the killed run waited for was sent %q, want twice with the tenant", bodies[k])
	}
}

// A page count that the page itself contradicts is no proof of the end:
// an API that says total_pages 0 (it does not count) or a count that
// shrinks below the page being served while that page holds records
// must not end a page walk (in the body, here) with exit 0 and the pages
// after it never read (docs/pagination.md, "How a run knows it reached
// the end").
func TestTotalPagesBelowAPageWithRecords(t *testing.T) {
	for _, c := range []struct {
		name, key string
		pages     func(page int) int // the count page N says
	}{
		{"zero", "total_pages", func(int) int { return 0 }},
		{"shrinks", "total_pages", func(page int) int { return min(5, page+1) - 2*(page/3) }}, // 2, 3, 2 (on page 3), …
		{"total zero", "total", func(int) int { return 0 }},
		{"total below the pages before", "total", func(page int) int { return min(50, 10*page+5) - 30*(page/3) }}, // 15, 25, 5 (on page 3), …
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 50
			url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				page := int(gjson.GetBytes(b, "paging.page").Int())
				var items []string
				for i := (page-1)*10 + 1; i <= min(page*10, n); i++ {
					items = append(items, fmt.Sprintf(`{"id":%d,"name":"order %d"}`, i, i))
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"items":[%s],"%s":%d}`, strings.Join(items, ","), c.key, c.pages(page))
			}))
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: tp
source:
  url: %s
  method: POST
  body: {paging: {page: 1}}
  records: items
pagination: {style: page, in: body, param: paging.page, size_param: per_page, size: 10, %s: %[2]s}
retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url, c.key))
			r := idemsync(t, dir, nil, "run", job)
			got := readItems(t, filepath.Join(dir, "out.db"), "", "")
			if r.code == 0 && len(got) != n {
				t.Fatalf("exit 0 with %d of %d orders\n%s", len(got), n, r.stderr)
			}
			t.Logf("exit %d, %d rows", r.code, len(got))
		})
	}
}

// The position's header wins over a source.headers entry of the same
// header, however either spells its case (HTTP header names are
// case-insensitive): pagination.param x-page with headers {X-Page: "1"}
// walks every page instead of asking for page 1 each time.
func TestHeaderPositionOverConfiguredHeaderAnyCase(t *testing.T) {
	const n = 25
	var mu sync.Mutex
	var sent []string
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, strings.Join(r.Header.Values("X-Page"), ","))
		mu.Unlock()
		page, _ := strconv.Atoi(r.Header.Get("X-Page"))
		var items []string
		for i := (page-1)*10 + 1; i <= min(page*10, n); i++ {
			items = append(items, fmt.Sprintf(`{"id":%d,"name":"order %d"}`, i, i))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"items":[%s]}`, strings.Join(items, ","))
	}))
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: hcase
source: {url: %s, records: items, headers: {X-Page: "1"}}
pagination: {style: page, in: header, param: x-page, size_param: per_page, size: 10}
retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url))
	r := idemsync(t, dir, nil, "run", job)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0; X-Page sent %q\n%s", r.code, sent, r.stderr)
	}
	assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), wantItems(n, func(i int) string { return fmt.Sprintf("order %d", i) }))
	if want := []string{"1", "2", "3", "4"}; strings.Join(sent, " ") != strings.Join(want, " ") {
		t.Errorf("X-Page sent %q, want %q", sent, want)
	}
}
