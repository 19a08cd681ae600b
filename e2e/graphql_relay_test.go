package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"

	graphql "github.com/graph-gophers/graphql-go"
)

// ---- a Relay connection (graph-gophers) over POST and GET --------------

const relaySchema = `
schema { query: Query }
type Query { orders(first: Int!, after: String): OrderConnection }
type OrderConnection { edges: [OrderEdge] nodes: [Order] pageInfo: PageInfo! totalCount: Int! }
type OrderEdge { cursor: String! node: Order }
type Order { id: Int! name: String! }
type PageInfo { endCursor: String hasNextPage: Boolean }
`

// relayCursor is an opaque base64 cursor whose text holds '+', '/' and
// '=' padding: a byte lost or changed on the way back (a '+' read as a
// space in a query string) makes it invalid.
func relayCursor(id int32) string {
	return base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("\xfb\xef\xbe\xff\xff\xff%04d", id)))
}

type relayRoot struct {
	mu       gosync.Mutex
	n        int32
	maxPage  int32    // the server's cap on first (0: none)
	nullNode int32    // this order's edge has node null
	nullMore bool     // hasNextPage is null on every page
	afters   []string // every after the resolver received ("" for null)
	schema   *atomic.Pointer[graphql.Schema]
}

type relayOrder struct{ id int32 }

func (o *relayOrder) ID() int32    { return o.id }
func (o *relayOrder) Name() string { return fmt.Sprintf("order %d", o.id) }

type relayEdge struct {
	o    *relayOrder
	null bool
}

func (e *relayEdge) Cursor() string { return relayCursor(e.o.id) }
func (e *relayEdge) Node() *relayOrder {
	if e.null {
		return nil
	}
	return e.o
}
func (c *relayConn) Nodes() *[]*relayOrder {
	out := make([]*relayOrder, len(c.orders))
	copy(out, c.orders)
	return &out
}

func (c *relayConn) Edges() *[]*relayEdge {
	out := []*relayEdge{}
	for _, o := range c.orders {
		out = append(out, &relayEdge{o, o.id == c.nullNode})
	}
	return &out
}

type relayConn struct {
	orders   []*relayOrder
	nullNode int32
	nullMore bool
	more     bool
	total    int32
}

func (c *relayConn) TotalCount() int32 { return c.total }
func (c *relayConn) PageInfo() *relayInfo {
	info := &relayInfo{more: c.more, null: c.nullMore}
	if len(c.orders) > 0 {
		s := relayCursor(c.orders[len(c.orders)-1].id)
		info.end = &s
	}
	return info
}

type relayInfo struct {
	null bool
	end  *string
	more bool
}

func (p *relayInfo) EndCursor() *string { return p.end }
func (p *relayInfo) HasNextPage() *bool {
	if p.null {
		return nil
	}
	return &p.more
}

func (r *relayRoot) Orders(args struct {
	First int32
	After *string
}) (*relayConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	after := int32(0)
	if args.After == nil {
		r.afters = append(r.afters, "")
	} else {
		r.afters = append(r.afters, *args.After)
		b, err := base64.StdEncoding.Strict().DecodeString(*args.After)
		if err != nil || !strings.HasPrefix(string(b), "\xfb\xef\xbe\xff\xff\xff") {
			return nil, codedError{fmt.Sprintf("invalid cursor %q", *args.After), "BAD_USER_INPUT"}
		}
		if _, err := fmt.Sscanf(string(b[6:]), "%d", &after); err != nil {
			return nil, codedError{fmt.Sprintf("invalid cursor %q", *args.After), "BAD_USER_INPUT"}
		}
	}
	first := args.First
	if r.maxPage > 0 {
		first = min(first, r.maxPage)
	}
	c := &relayConn{total: r.n, nullNode: r.nullNode, nullMore: r.nullMore}
	for id := after + 1; id <= r.n && int32(len(c.orders)) < first; id++ {
		c.orders = append(c.orders, &relayOrder{id})
	}
	c.more = after+int32(len(c.orders)) < r.n
	return c, nil
}

// relayServer serves the schema with graph-gophers: a POST body
// ({query, variables, operationName}) or a GET query string (query,
// variables as JSON, operationName). front, when set, may answer a
// request itself before the schema runs (a gateway's rate limit); it
// gets the request's number (from 1) and the variables' after.
func relayServer(t *testing.T, n int32, front func(k int64, after string, w http.ResponseWriter) bool) (string, *relayRoot, *atomic.Int64) {
	t.Helper()
	root := &relayRoot{n: n}
	var schema atomic.Pointer[graphql.Schema]
	schema.Store(graphql.MustParseSchema(relaySchema, root, graphql.UseFieldResolvers()))
	root.schema = &schema
	var reqs atomic.Int64
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := reqs.Add(1)
		var p struct {
			Query         string         `json:"query"`
			OperationName string         `json:"operationName"`
			Variables     map[string]any `json:"variables"`
		}
		if r.Method == http.MethodGet {
			q := r.URL.Query()
			p.Query, p.OperationName = q.Get("query"), q.Get("operationName")
			if v := q.Get("variables"); v != "" {
				if err := json.Unmarshal([]byte(v), &p.Variables); err != nil {
					http.Error(w, "variables: "+err.Error(), http.StatusBadRequest)
					return
				}
			}
		} else {
			b, _ := io.ReadAll(r.Body)
			if err := json.Unmarshal(b, &p); err != nil {
				http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
				return
			}
		}
		after, _ := p.Variables["after"].(string)
		if front != nil && front(k, after, w) {
			return
		}
		resp := schema.Load().Exec(r.Context(), p.Query, p.OperationName, p.Variables)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}))
	return url, root, &reqs
}

const relayQuery = "query Orders($after: String) { orders(first: 10, after: $after) { nodes { id name } pageInfo { endCursor hasNextPage } } }"

// relayPostJob walks the connection with the cursor in variables.after.
func relayPostJob(url, query string) string {
	q, _ := json.Marshal(query)
	return fmt.Sprintf(`name: relay
source:
  url: %s
  method: POST
  body:
    query: %s
    variables: {after: null}
  records: data.orders.nodes
pagination:
  style: cursor
  next: data.orders.pageInfo.endCursor
  has_more: data.orders.pageInfo.hasNextPage
  in: body
  param: variables.after
retry: {attempts: 3, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url, q)
}

func relayItems(n int) map[int]string {
	return wantItems(n, func(i int) string { return fmt.Sprintf("order %d", i) })
}

// A GraphQL gateway that throttles answers 200 with errors and no data
// (Shopify: extensions.code THROTTLED; GitHub: type RATE_LIMITED), before
// the query runs. That is not a request the server refused: the same
// request succeeds once the bucket refills, so the page is retried (exit
// 0 with every order once the throttle lifts, exit 3 if it never does),
// never a permanent exit 1 after one request (docs/job-file.md, "Error
// payloads in a 2xx body").
func TestGraphQLThrottledIsRetried(t *testing.T) {
	for _, c := range []struct{ name, extra, body string }{
		{"shopify", "", `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED","documentation":"https://shopify.dev/api/usage/rate-limits"}}],"extensions":{"cost":{"requestedQueryCost":12,"actualQueryCost":null,"throttleStatus":{"maximumAvailable":1000.0,"currentlyAvailable":4,"restoreRate":50.0}}}}`},
		{"github", "", `{"errors":[{"type":"RATE_LIMITED","code":"graphql_rate_limit","message":"API rate limit exceeded for user ID 1."}]}`},
		// The documented filter that lets errors inside a record through
		// lets a throttle's pathless error through too: no data is left.
		{"shopify, filtered", `  error_path: "errors.#(path.#<4)#"` + "\n", `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],"extensions":{"cost":{}}}`},
		{"code rate limited", "", `{"errors":[{"message":"Too many requests","extensions":{"code":"RATE_LIMITED"}}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var throttle atomic.Int64 // requests for page 2 still throttled
			throttle.Store(2)
			url, _, reqs := relayServer(t, 25, func(k int64, after string, w http.ResponseWriter) bool {
				if after == relayCursor(10) && throttle.Add(-1) >= 0 {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, c.body)
					return true
				}
				return false
			})
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", strings.Replace(relayPostJob(url, relayQuery), "  records:", c.extra+"  records:", 1))
			r := idemsync(t, dir, nil, "run", job)
			if r.code != 0 {
				t.Fatalf("throttled twice, then served: exit %d after %d requests, want 0\n%s", r.code, reqs.Load(), r.stderr)
			}
			assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), relayItems(25))
			// A throttle that never lifts is transient to the end: exit 3.
			throttle.Store(1 << 30)
			if r := idemsync(t, dir, nil, "run", job, "--full"); r.code != 3 || !strings.Contains(r.stderr, "errors") {
				t.Errorf("throttled on every attempt: exit %d, want 3 naming the errors\n%s", r.code, r.stderr)
			}
		})
	}
}

func (r *relayRoot) set(fn func(r *relayRoot)) { r.mu.Lock(); defer r.mu.Unlock(); fn(r) }

// relayGetJob walks the connection over GET: the query in the URL's
// query, the cursor in its variables (JSON written by the template).
func relayGetJob(url, query, extra string) string {
	q, _ := json.Marshal(query)
	return fmt.Sprintf(`name: relayget
source:
  url: %s
  query: {query: %s}
  records: data.orders.nodes
%spagination:
  style: cursor
  next: data.orders.pageInfo.endCursor
  has_more: data.orders.pageInfo.hasNextPage
  param: variables
  template: '{"after":"{value}"}'
retry: {attempts: 3, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url, q, extra)
}

// Base64 cursors ('+', '/', '=') go back byte for byte, in a POST body's
// variables and in a GET query string's variables alike, and the server
// capping first (asked 10, serving 4) only makes more pages.
func TestGraphQLBase64Cursors(t *testing.T) {
	for _, method := range []string{"POST", "GET"} {
		t.Run(method, func(t *testing.T) {
			url, root, _ := relayServer(t, 25, nil)
			root.set(func(r *relayRoot) { r.maxPage = 4 })
			dir := t.TempDir()
			spec := relayPostJob(url, relayQuery)
			if method == "GET" {
				spec = relayGetJob(url, relayQuery, "  error_path: errors\n")
			}
			r := idemsync(t, dir, nil, "run", writeJob(t, dir, "job.yaml", spec))
			if r.code != 0 {
				t.Fatalf("exit %d, want 0; afters %q\n%s", r.code, root.afters, r.stderr)
			}
			assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), relayItems(25))
			want := []string{""}
			for id := int32(4); id < 25; id += 4 {
				want = append(want, relayCursor(id))
			}
			if strings.Join(root.afters, " ") != strings.Join(want, " ") {
				t.Errorf("after received %q, want %q", root.afters, want)
			}
		})
	}
}

// The server's schema loses a field between runs: the query it refuses
// in validation (errors, no data) fails at once with exit 1 naming the
// field, over POST and over GET (error_path set or not).
func TestGraphQLFieldRemoved(t *testing.T) {
	for _, c := range []struct{ name, method, extra string }{
		{"post", "POST", ""},
		{"get error_path", "GET", "  error_path: errors\n"},
		{"get", "GET", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, root, _ := relayServer(t, 25, nil)
			dir := t.TempDir()
			spec := relayPostJob(url, relayQuery)
			if c.method == "GET" {
				spec = relayGetJob(url, relayQuery, c.extra)
			}
			job := writeJob(t, dir, "job.yaml", spec)
			runCode(t, dir, nil, 0, "run", job)
			root.schema.Store(graphql.MustParseSchema(strings.Replace(relaySchema, " name: String!", "", 1), root, graphql.UseFieldResolvers()))
			r := idemsync(t, dir, nil, "run", job, "--full")
			if r.code != 1 || !strings.Contains(r.stderr, `Cannot query field \"name\"`) {
				t.Errorf("exit %d, want 1 naming the field\n%s", r.code, r.stderr)
			}
			assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), relayItems(25))
		})
	}
}

// Contradicting or missing signals: hasNextPage null on every page (the
// cursor goes on: exit 0 with every order), an edge whose node is null
// (not a record to skip: exit non-zero), and
// the job's position variable is not the query's.
func TestGraphQLSignals(t *testing.T) {
	edges := "query Orders($after: String) { orders(first: 10, after: $after) { edges { cursor node { id name } } pageInfo { endCursor hasNextPage } } }"
	for _, c := range []struct {
		name string
		set  func(r *relayRoot)
		job  func(url string) string
		code int
	}{
		{"hasNextPage null", func(r *relayRoot) { r.nullMore = true }, func(url string) string { return relayPostJob(url, relayQuery) }, 0},
		{"node null", func(r *relayRoot) { r.nullNode = 14 }, func(url string) string {
			return strings.Replace(relayPostJob(url, edges), "records: data.orders.nodes", "records: data.orders.edges.#.node", 1)
		}, 1},
		{"node null, edges", func(r *relayRoot) { r.nullNode = 14 }, func(url string) string {
			return strings.Replace(strings.Replace(relayPostJob(url, edges), "records: data.orders.nodes", "records: data.orders.edges", 1),
				"key: [id]}", "key: [id], columns: {id: {path: node.id, type: integer}, name: node.name}}", 1)
		}, 1},
		// The query declares $cursor, the job sets variables.after: the
		// server ignores the unknown variable and serves the first page
		// again, whose endCursor comes a second time: a loop, exit 1.
		{"variable named differently", func(r *relayRoot) {}, func(url string) string {
			return relayPostJob(url, strings.ReplaceAll(relayQuery, "$after", "$cursor"))
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, root, _ := relayServer(t, 25, nil)
			root.set(c.set)
			dir := t.TempDir()
			r := idemsync(t, dir, nil, "run", writeJob(t, dir, "job.yaml", c.job(url)))
			got := readItems(t, filepath.Join(dir, "out.db"), "", "")
			if r.code != c.code || (c.code == 1 && len(got) > 10) {
				t.Errorf("exit %d with %d rows, want %d; afters %q\n%s", r.code, len(got), c.code, root.afters, r.stderr)
			}
			if r.code == 0 {
				assertItems(t, got, relayItems(25))
			}
		})
	}
}

// A persisted query over GET (extensions in the URL, no query) that the
// server does not know: exit 1 after one request, naming the error, with
// error_path: errors and without it.
func TestGraphQLGetPersistedUnknown(t *testing.T) {
	for _, extra := range []string{"  error_path: errors\n", ""} {
		t.Run(fmt.Sprintf("error_path %v", extra != ""), func(t *testing.T) {
			url, _, reqs := relayServer(t, 25, func(k int64, after string, w http.ResponseWriter) bool {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}`)
				return true
			})
			dir := t.TempDir()
			spec := strings.Replace(relayGetJob(url, "", extra), `query: {query: ""}`,
				`query: {operationName: Orders, extensions: '{"persistedQuery":{"version":1,"sha256Hash":"ab12"}}'}`, 1)
			r := idemsync(t, dir, nil, "run", writeJob(t, dir, "job.yaml", spec))
			if r.code != 1 || !strings.Contains(r.stderr, "PERSISTED_QUERY_NOT_FOUND") {
				t.Errorf("exit %d, want 1 naming PERSISTED_QUERY_NOT_FOUND\n%s", r.code, r.stderr)
			}
			if n := reqs.Load(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

// ---- fan-out over a GraphQL child connection ---------------------------

const nestedSchema = `
schema { query: Query }
type Query { orders(first: Int!, after: String): NOrderConnection! order(id: ID!): NOrder }
type NOrderConnection { nodes: [NOrder!]! pageInfo: NPageInfo! }
type NOrder { id: Int! name: String! lines(first: Int!, after: String): LineConnection! }
type LineConnection { nodes: [Line!]! pageInfo: NPageInfo! }
type Line { id: Int! sku: String! }
type NPageInfo { endCursor: String hasNextPage: Boolean! }
`

// arrayCursor is graphql-relay-js's cursor: base64 of "arrayconnection:"
// and the offset, the same text for the same offset under every parent.
func arrayCursor(off int) string {
	return base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("arrayconnection:%d", off)))
}

type nestedRoot struct {
	orders, lines int
	mu            gosync.Mutex
	sent          []string // order id and after of every lines request
}

type nOrder struct {
	root *nestedRoot
	id   int32
}

type nLine struct {
	id  int32
	sku string
}

type nPageInfo struct {
	end  *string
	more bool
}

type nOrderConn struct {
	nodes []*nOrder
	info  *nPageInfo
}

type nLineConn struct {
	nodes []*nLine
	info  *nPageInfo
}

func (o *nOrder) ID() int32                { return o.id }
func (o *nOrder) Name() string             { return fmt.Sprintf("order %d", o.id) }
func (l *nLine) ID() int32                 { return l.id }
func (l *nLine) Sku() string               { return l.sku }
func (p *nPageInfo) EndCursor() *string    { return p.end }
func (p *nPageInfo) HasNextPage() bool     { return p.more }
func (c *nOrderConn) Nodes() []*nOrder     { return c.nodes }
func (c *nOrderConn) PageInfo() *nPageInfo { return c.info }
func (c *nLineConn) Nodes() []*nLine       { return c.nodes }
func (c *nLineConn) PageInfo() *nPageInfo  { return c.info }

// page reads an arrayconnection cursor: the offsets first..last of a page
// of first items out of n.
func page(after *string, first, n int) (int, int, *nPageInfo, error) {
	start := 0
	if after != nil {
		b, err := base64.StdEncoding.Strict().DecodeString(*after)
		var off int
		if err == nil {
			_, err = fmt.Sscanf(string(b), "arrayconnection:%d", &off)
		}
		if err != nil {
			return 0, 0, nil, codedError{fmt.Sprintf("invalid cursor %q", *after), "BAD_USER_INPUT"}
		}
		start = off + 1
	}
	end := min(start+first, n)
	info := &nPageInfo{more: end < n}
	if end > start {
		s := arrayCursor(end - 1)
		info.end = &s
	}
	return start, end, info, nil
}

func (r *nestedRoot) Orders(args struct {
	First int32
	After *string
}) (*nOrderConn, error) {
	start, end, info, err := page(args.After, int(args.First), r.orders)
	if err != nil {
		return nil, err
	}
	c := &nOrderConn{info: info}
	for i := start; i < end; i++ {
		c.nodes = append(c.nodes, &nOrder{r, int32(i + 1)})
	}
	return c, nil
}

func (r *nestedRoot) Order(args struct{ ID graphql.ID }) (*nOrder, error) {
	var id int32
	if _, err := fmt.Sscanf(string(args.ID), "%d", &id); err != nil || id < 1 || int(id) > r.orders {
		return nil, nil
	}
	return &nOrder{r, id}, nil
}

func (o *nOrder) Lines(args struct {
	First int32
	After *string
}) (*nLineConn, error) {
	after := ""
	if args.After != nil {
		after = *args.After
	}
	o.root.mu.Lock()
	o.root.sent = append(o.root.sent, fmt.Sprintf("%d:%s", o.id, after))
	o.root.mu.Unlock()
	start, end, info, err := page(args.After, int(args.First), o.root.lines)
	if err != nil {
		return nil, err
	}
	c := &nLineConn{info: info}
	for i := start; i < end; i++ {
		c.nodes = append(c.nodes, &nLine{int32(i + 1), fmt.Sprintf("o%d-l%d", o.id, i+1)})
	}
	return c, nil
}

// Each parent order's lines are a child connection of its own, whose
// cursors (graphql-relay-js arrayconnection offsets, '=' padded) are the
// same text under every parent: a child walk per parent, the cursor
// going back byte for byte in variables.after, every line of every order
// stored, also when runs stop after a few pages (--max-pages) and
// continue mid-parent.
func TestGraphQLNestedConnectionFanout(t *testing.T) {
	for _, maxPages := range []int{0, 4} {
		t.Run(fmt.Sprintf("max-pages %d", maxPages), func(t *testing.T) {
			root := &nestedRoot{orders: 5, lines: 23}
			schema := graphql.MustParseSchema(nestedSchema, root, graphql.UseFieldResolvers())
			url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var p struct {
					Query     string         `json:"query"`
					Variables map[string]any `json:"variables"`
				}
				if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(schema.Exec(r.Context(), p.Query, "", p.Variables))
			}))
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: nested
defaults:
  source: {url: %s, method: POST}
  target: {url: "sqlite:out.db"}
  retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
resources:
  - name: orders
    source:
      body:
        query: "query($after: String) { orders(first: 2, after: $after) { nodes { id name } pageInfo { endCursor hasNextPage } } }"
        variables: {after: null}
      records: data.orders.nodes
    pagination: {style: cursor, next: data.orders.pageInfo.endCursor, has_more: data.orders.pageInfo.hasNextPage, in: body, param: variables.after}
    target: {table: orders, key: [id]}
  - name: lines
    parent: orders
    parent_rows: all
    source:
      body:
        query: "query($id: ID!, $after: String) { order(id: $id) { lines(first: 10, after: $after) { nodes { id sku } pageInfo { endCursor hasNextPage } } } }"
        variables: {id: "{parent.id}", after: null}
      records: data.order.lines.nodes
    pagination: {style: cursor, next: data.order.lines.pageInfo.endCursor, has_more: data.order.lines.pageInfo.hasNextPage, in: body, param: variables.after}
    target:
      table: lines
      key: [order_id, id]
      columns: {order_id: {parent: id}, id: {path: id, type: integer}, sku: sku}
`, url))
			for i := 0; ; i++ {
				args := []string{"run", job}
				if maxPages > 0 {
					args = append(args, "--max-pages", fmt.Sprint(maxPages))
				}
				r := idemsync(t, dir, nil, args...)
				if r.code != 0 {
					t.Fatalf("run %d: exit %d\n%s", i, r.code, r.stderr)
				}
				if maxPages == 0 || i > 20 {
					break
				}
				var n int
				if err := openSQLite(t, filepath.Join(dir, "out.db")).QueryRow(`SELECT count(*) FROM lines`).Scan(&n); err == nil && n == 5*23 {
					break
				}
			}
			rows, err := openSQLite(t, filepath.Join(dir, "out.db")).Query(`SELECT order_id, id, sku FROM lines`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			got := map[string]bool{}
			for rows.Next() {
				var o, id int
				var sku string
				if err := rows.Scan(&o, &id, &sku); err != nil {
					t.Fatal(err)
				}
				if sku != fmt.Sprintf("o%d-l%d", o, id) {
					t.Errorf("order %d line %d: sku %q", o, id, sku)
				}
				got[sku] = true
			}
			if len(got) != 5*23 {
				t.Errorf("%d lines, want %d; lines requests %q", len(got), 5*23, root.sent)
			}
		})
	}
}
