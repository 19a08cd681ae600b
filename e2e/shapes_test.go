package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	graphql "github.com/graph-gophers/graphql-go"
	"github.com/graph-gophers/graphql-go/relay"
	"github.com/jackc/pgx/v5"
)

// ---- a real GraphQL server (graph-gophers/graphql-go) -----------------

const gqlSchema = `
schema { query: Query }
type Query { orders(first: Int!, after: String): OrderConnection! }
type OrderConnection { nodes: [Order!]! pageInfo: PageInfo! }
type Order { id: Int! name: String! }
type PageInfo { endCursor: String hasNextPage: Boolean! }
`

type gqlOrder struct {
	id   int32
	name string
}

func (o gqlOrder) ID() int32        { return o.id }
func (o gqlOrder) Name() string     { return o.name }
func (c gqlConn) Nodes() []gqlOrder { return c.nodes }
func (c gqlConn) PageInfo() gqlPageInfo {
	return c.info
}
func (p gqlPageInfo) EndCursor() *string { return p.end }
func (p gqlPageInfo) HasNextPage() bool  { return p.more }

type gqlConn struct {
	nodes []gqlOrder
	info  gqlPageInfo
}

type gqlPageInfo struct {
	end  *string
	more bool
}

// gqlRoot serves orders 1..n by an opaque cursor ("c" + the last id).
type gqlRoot struct {
	mu     sync.Mutex
	orders []gqlOrder
	afters []string // every after argument the resolver received, "" for null
	sent   []string // variables.after of every request sent, "" for null
}

func (r *gqlRoot) Orders(args struct {
	First int32
	After *string
}) (gqlConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	after := 0
	if args.After != nil {
		r.afters = append(r.afters, *args.After)
		n, err := strconv.Atoi(strings.TrimPrefix(*args.After, "c"))
		if err != nil || !strings.HasPrefix(*args.After, "c") {
			return gqlConn{}, fmt.Errorf("invalid cursor %q", *args.After)
		}
		after = n
	} else {
		r.afters = append(r.afters, "")
	}
	i := sort.Search(len(r.orders), func(i int) bool { return int(r.orders[i].id) > after })
	end := min(i+int(args.First), len(r.orders))
	c := gqlConn{nodes: r.orders[i:end], info: gqlPageInfo{more: end < len(r.orders)}}
	if end > i {
		cur := fmt.Sprintf("c%d", r.orders[end-1].id)
		c.info.end = &cur
	}
	return c, nil
}

// gqlServer starts the GraphQL API with n orders; errorsAt makes those
// requests (1-based) answer 200 with a GraphQL errors payload.
func gqlServer(t *testing.T, n int, latency time.Duration, errorsAt ...int64) (string, *gqlRoot, *atomic.Int64) {
	t.Helper()
	root := &gqlRoot{}
	for i := 1; i <= n; i++ {
		root.orders = append(root.orders, gqlOrder{id: int32(i), name: fmt.Sprintf("order %d", i)})
	}
	schema := graphql.MustParseSchema(gqlSchema, root, graphql.UseFieldResolvers())
	h := &relay.Handler{Schema: schema}
	var reqs atomic.Int64
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := reqs.Add(1)
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var b struct {
			Variables struct{ After *string } `json:"variables"`
		}
		_ = json.Unmarshal(body, &b)
		after := ""
		if b.Variables.After != nil {
			after = *b.Variables.After
		}
		root.mu.Lock()
		root.sent = append(root.sent, after)
		root.mu.Unlock()
		time.Sleep(latency)
		if slices.Contains(errorsAt, k) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"errors":[{"message":"throttled: try again"}],"data":null}`)
			return
		}
		h.ServeHTTP(w, r)
	}))
	return url, root, &reqs
}

func gqlJob(url, target string) string {
	return fmt.Sprintf(`name: gql
source:
  url: %s
  method: POST
  body:
    query: "query($after: String) { orders(first: 10, after: $after) { nodes { id name } pageInfo { endCursor hasNextPage } } }"
    variables: {after: null}
  records: data.orders.nodes
pagination:
  style: cursor
  next: data.orders.pageInfo.endCursor
  has_more: data.orders.pageInfo.hasNextPage
  in: body
  param: variables.after
retry: {attempts: 4, min_wait: 1ms, max_wait: 5ms}
target: {url: "%s", table: items, key: [id]}
`, url, target)
}

// readItems reads the id and name of every row of items in a SQLite file
// or a PostgreSQL schema, failing on a duplicate id.
func readItems(t *testing.T, sqlitePath, pgURL, schema string) map[int]string {
	t.Helper()
	var rows interface {
		Next() bool
		Scan(...any) error
	}
	if pgURL != "" {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pgURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		pr, err := conn.Query(ctx, "SELECT id::int, name FROM "+pgx.Identifier{schema, "items"}.Sanitize())
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		rows = pr
	} else {
		sr, err := openSQLite(t, sqlitePath).Query(`SELECT id, name FROM items`)
		if err != nil {
			t.Fatal(err)
		}
		defer sr.Close()
		rows = sr
	}
	out := map[int]string{}
	for rows.Next() {
		var id int
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		if _, dup := out[id]; dup {
			t.Fatalf("duplicate id %d", id)
		}
		out[id] = name
	}
	return out
}

func wantItems(n int, name func(int) string) map[int]string {
	out := map[int]string{}
	for i := 1; i <= n; i++ {
		out[i] = name(i)
	}
	return out
}

func assertItems(t *testing.T, got, want map[int]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d rows, want %d", len(got), len(want))
	}
	for id, name := range want {
		if got[id] != name {
			t.Errorf("id %d: %q, want %q", id, got[id], name)
		}
	}
}

// A GraphQL API paged by a cursor in the POST body's variables: every
// request carries the previous page's endCursor in variables.after (the
// first one null), the walk ends on hasNextPage false, a GraphQL errors
// payload in a 200 is retried like error_path, and the checkpoint holds
// the cursor, not the body. On SQLite and PostgreSQL.
func TestGraphQLCursorInBody(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			url, root, reqs := gqlServer(t, 57, 0, 3)
			dir := t.TempDir()
			target, pgURL, schema := "sqlite:out.db", "", ""
			if db == "postgres" {
				pgURL = postgresURL(t)
				schema = freshSchema(t, pgURL)
				target = pgURL
			}
			spec := gqlJob(url, target)
			if schema != "" {
				spec = strings.Replace(spec, "table: items", "table: "+schema+".items", 1)
			}
			job := writeJob(t, dir, "job.yaml", spec)
			res := runCode(t, dir, nil, 0, "run", job)
			if res.Pages != 6 {
				t.Errorf("%d pages, want 6 (57 orders, 10 a page)", res.Pages)
			}
			assertItems(t, readItems(t, filepath.Join(dir, "out.db"), pgURL, schema), wantItems(57, func(i int) string { return fmt.Sprintf("order %d", i) }))
			want := []string{"", "c10", "c20", "c20", "c30", "c40", "c50"} // the third request answered errors and was sent again
			if !slices.Equal(root.sent, want) {
				t.Errorf("variables.after of the requests %q, want %q", root.sent, want)
			}
			if n := reqs.Load(); n != 7 {
				t.Errorf("%d requests, want 7", n)
			}
			st := statusOf(t, dir, job)
			if strings.Contains(st.Checkpoint, "query") || strings.Contains(st.Checkpoint, "{") {
				t.Errorf("checkpoint %q holds the body; want only the cursor", st.Checkpoint)
			}
		})
	}
}

// A GraphQL API that answers every request with errors in a 200 fails the
// run as transient (exit 3) instead of syncing nothing with exit 0.
func TestGraphQLErrorsNotComplete(t *testing.T) {
	url, _, _ := gqlServer(t, 5, 0, 1, 2, 3, 4, 5, 6)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", gqlJob(url, "sqlite:out.db"))
	r := idemsync(t, dir, nil, "run", job)
	if r.code != 3 || !strings.Contains(r.stderr, "errors") {
		t.Errorf("exit %d, want 3 naming the errors payload:\n%s", r.code, r.stderr)
	}
}

// SIGKILLs during a GraphQL walk converge, and each resume continues at
// the saved cursor (the request count stays within one full pass per
// completed run plus the pages a kill can waste).
func TestGraphQLCrashConvergence(t *testing.T) {
	const orders, kills = 300, 12
	url, root, reqs := gqlServer(t, orders, 3*time.Millisecond)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", gqlJob(url, "sqlite:out.db"))
	seed := uint64(time.Now().UnixNano())
	st := crashLoop(t, dir, job, kills, seed, 10*time.Millisecond, 80*time.Millisecond)
	assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), wantItems(orders, func(i int) string { return fmt.Sprintf("order %d", i) }))
	completed := completedRuns(t, dir, job)
	fullPass := orders / 10
	bound := completed*fullPass + 2*(st.kills+1)
	t.Logf("seed %d: %d kills, %d completed, %d requests (bound %d), first cursors %q", seed, st.kills, completed, reqs.Load(), bound, root.afters[:min(5, len(root.afters))])
	if int(reqs.Load()) > bound {
		t.Errorf("%d requests, more than %d: a resumed run did not continue at its cursor", reqs.Load(), bound)
	}
}

// ---- a PostgREST-like API --------------------------------------------

// postgrest serves items 1..n as PostgREST does: a Range request header
// (items=A-B) with a Content-Range answer, id=gt.N / id=gte.N keyset
// filters with limit, and a select[] list that must be repeated.
func postgrest(t *testing.T, n int) (string, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Range")+" "+r.URL.RawQuery)
		mu.Unlock()
		q := r.URL.Query()
		if sel := q["select[]"]; !slices.Equal(sel, []string{"id", "name"}) {
			http.Error(w, fmt.Sprintf(`{"message":"select[] must be id and name, got %q"}`, sel), 400)
			return
		}
		from, to := 0, n-1
		if rg := r.Header.Get("Range"); rg != "" {
			a, b, ok := strings.Cut(strings.TrimPrefix(rg, "items="), "-")
			fa, ea := strconv.Atoi(a)
			fb, eb := strconv.Atoi(b)
			if !ok || ea != nil || eb != nil || !strings.HasPrefix(rg, "items=") {
				http.Error(w, `{"message":"bad range"}`, http.StatusRequestedRangeNotSatisfiable)
				return
			}
			from, to = fa, min(fb, n-1)
		}
		if f := q.Get("id"); f != "" {
			op, v, _ := strings.Cut(f, ".")
			k, err := strconv.Atoi(v)
			if err != nil {
				http.Error(w, `{"message":"bad filter"}`, 400)
				return
			}
			from = k // gt: ids after k (index k is id k+1)
			if op == "gte" {
				from = k - 1
			}
		}
		if l := q.Get("limit"); l != "" && r.Header.Get("Range") == "" {
			k, _ := strconv.Atoi(l)
			to = min(from+k-1, n-1)
		}
		var out []map[string]any
		for i := from; i <= to && i < n; i++ {
			out = append(out, map[string]any{"id": i + 1, "name": fmt.Sprintf("item %d", i+1)})
		}
		if len(out) == 0 {
			w.Header().Set("Content-Range", fmt.Sprintf("*/%d", n))
		} else {
			w.Header().Set("Content-Range", fmt.Sprintf("%d-%d/%d", from, from+len(out)-1, n))
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(out)
		if out == nil {
			b = []byte("[]")
		}
		_, _ = w.Write(b)
	}))
	return url, &seen
}

// The position in a request header written by a template (PostgREST's
// Range: items=0-6), a total from Content-Range, a keyset filter written
// by a template (id=gt.N) with the next cursor read from the last record
// (@reverse.0.id), an inclusive keyset (id=gte.N) that ends without a
// false loop, and a repeated query key (select[]: [id, name]).
func TestPostgRESTShapes(t *testing.T) {
	const n = 23
	for _, tc := range []struct {
		name, pagination string
		wantFirst        string
	}{
		{"range header", `{style: offset, size: 7, in: header, param: Range, template: "items={offset}-{end}", total: "header:Content-Range"}`, "items=0-6 "},
		{"keyset gt", `{style: cursor, param: id, template: "gt.{value}", next: "@reverse.0.id"}`, " limit=5&"},
		{"keyset gte", `{style: cursor, param: id, template: "gte.{value}", next: "@reverse.0.id"}`, " limit=5&"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, seen := postgrest(t, n)
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: pgrst
source:
  url: %s/items
  query: {order: id.asc, limit: "5", "select[]": [id, name]}
pagination: %s
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url, tc.pagination))
			r := idemsync(t, dir, nil, "run", job)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\nrequests %q", r.code, r.stderr, *seen)
			}
			assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), wantItems(n, func(i int) string { return fmt.Sprintf("item %d", i) }))
			if len(*seen) == 0 || !strings.HasPrefix((*seen)[0], tc.wantFirst) {
				t.Errorf("first request %q, want it to start %q", (*seen)[0], tc.wantFirst)
			}
			t.Logf("requests: %q", *seen)
		})
	}
}

// Elasticsearch's search_after: the cursor is the last hit's sort values
// (a JSON array), sent back as an array in the POST body.
func TestElasticsearchSearchAfter(t *testing.T) {
	const n = 17
	var mu sync.Mutex
	var afters []string
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Size        int               `json:"size"`
			SearchAfter []json.RawMessage `json:"search_after"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Size != 5 {
			http.Error(w, `{"error":"bad request"}`, 400)
			return
		}
		from := 0
		if len(req.SearchAfter) == 2 {
			var id int
			_ = json.Unmarshal(req.SearchAfter[1], &id)
			from = id
		}
		mu.Lock()
		afters = append(afters, fmt.Sprint(len(req.SearchAfter), ":", from))
		mu.Unlock()
		var hits []map[string]any
		for i := from + 1; i <= min(from+req.Size, n); i++ {
			hits = append(hits, map[string]any{"_source": map[string]any{"id": i, "name": fmt.Sprintf("doc %d", i)},
				"sort": []any{1700000000 + i, i}})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"hits": map[string]any{"hits": append([]map[string]any{}, hits...)}})
	}))
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: es
source:
  url: %s/orders/_search
  method: POST
  body: {size: 5, sort: [{updated_at: asc}, {id: asc}]}
  records: hits.hits
pagination: {style: cursor, next: "hits.hits.@reverse.0.sort", in: body, param: search_after}
target:
  url: "sqlite:out.db"
  table: items
  key: [id]
  columns: {id: {path: _source.id, type: integer}, name: _source.name}
`, url))
	r := idemsync(t, dir, nil, "run", job)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), wantItems(n, func(i int) string { return fmt.Sprintf("doc %d", i) }))
	if want := []string{"0:0", "2:5", "2:10", "2:15", "2:17"}; !slices.Equal(afters, want) {
		t.Errorf("search_after sent %q, want %q (an array of two sort values after the first page)", afters, want)
	}
}

// incremental.end_param sends the run's start as the upper bound of every
// request; a run continued later keeps the bound it started with, and the
// next run's window starts where the completed run's ended.
func TestIncrementalEndParam(t *testing.T) {
	var mu sync.Mutex
	var untils, sinces []string
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		untils, sinces = append(untils, q.Get("until")), append(sinces, q.Get("since"))
		mu.Unlock()
		p, _ := strconv.Atoi(q.Get("page"))
		w.Header().Set("Content-Type", "application/json")
		if p < 1 || p > 2 {
			fmt.Fprint(w, `{"data":[]}`)
			return
		}
		fmt.Fprintf(w, `{"data":[{"id":%d,"name":"n","updated_at":"2024-05-0%dT00:00:00Z"}]}`, p, p)
	}))
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: until
source: {url: "%s", records: data}
pagination: {style: page}
incremental: {field: updated_at, param: since, end_param: until, initial: "2024-01-01T00:00:00Z"}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url))
	before := time.Now().UTC().Truncate(time.Second)
	runCode(t, dir, nil, 0, "run", job, "--max-pages", "1")
	time.Sleep(1100 * time.Millisecond)
	runCode(t, dir, nil, 0, "run", job)
	if len(untils) != 3 || untils[0] == "" || untils[0] != untils[1] || untils[1] != untils[2] {
		t.Fatalf("until sent %q, want the run's start on all 3 requests of the one run", untils)
	}
	ut, err := time.Parse(time.RFC3339, untils[0])
	if err != nil || ut.Before(before) || ut.After(before.Add(2*time.Second)) {
		t.Errorf("until %q, want the run's start (%s) in the form of the marks", untils[0], before)
	}
	runCode(t, dir, nil, 0, "run", job)
	if last := untils[len(untils)-1]; last == untils[0] || sinces[len(sinces)-1] != "2024-05-02T00:00:00Z" {
		t.Errorf("next run: since %q until %q, want since at the saved mark and a later until", sinces[len(sinces)-1], last)
	}
}
