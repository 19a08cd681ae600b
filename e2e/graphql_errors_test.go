package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"

	graphql "github.com/graph-gophers/graphql-go"
	"github.com/graph-gophers/graphql-go/relay"
)

// ---- a paged GraphQL API with persisted queries (graph-gophers) -------

const pqSchema = `
schema { query: Query }
type Query { items(page: Int!, size: Int!): [Item!] }
type Item { id: Int! name: String! note: String }
`

// pqQuery is the query the persisted hash pqHash stands for.
const (
	pqQuery = "query Items($page: Int!) { items(page: $page, size: 10) { id name note } }"
	pqHash  = "9f1c0e"
)

type pqItem struct {
	id      int32
	noteErr bool
}

func (i pqItem) ID() int32    { return i.id }
func (i pqItem) Name() string { return fmt.Sprintf("item %d", i.id) }
func (i pqItem) Note() (*string, error) {
	if i.noteErr {
		return nil, errors.New("note service unavailable")
	}
	s := "ok"
	return &s, nil
}

// codedError is a resolver error with an extensions.code, as Apollo and
// graphql-yoga send them.
type codedError struct{ msg, code string }

func (e codedError) Error() string                   { return e.msg }
func (e codedError) Extensions() map[string]any      { return map[string]any{"code": e.code} }
func (r *pqRoot) set(fn func(r *pqRoot))             { r.mu.Lock(); defer r.mu.Unlock(); fn(r) }
func (r *pqRoot) failing() (page int32, code string) { return r.failPage, r.failCode }

// pqRoot serves items 1..n, ten a page; failPage makes that page's
// resolver fail (with failCode as its extensions.code when set), noteErr
// makes one item's nullable note fail.
type pqRoot struct {
	mu       gosync.Mutex
	n        int32
	failPage int32
	failCode string
	noteErr  int32
}

func (r *pqRoot) Items(args struct{ Page, Size int32 }) (*[]pqItem, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if page, code := r.failing(); page == args.Page {
		if code != "" {
			return nil, codedError{"page out of range", code}
		}
		return nil, errors.New("upstream timeout")
	}
	out := []pqItem{}
	for id := (args.Page-1)*args.Size + 1; id <= args.Page*args.Size && id <= r.n; id++ {
		out = append(out, pqItem{id: id, noteErr: id == r.noteErr})
	}
	return &out, nil
}

// pqServer starts the API: a body without a query is looked up by its
// extensions.persistedQuery.sha256Hash (an unknown hash answers Apollo's
// PERSISTED_QUERY_NOT_FOUND), then served by graph-gophers' relay handler.
func pqServer(t *testing.T, n int32) (string, *pqRoot, *atomic.Int64) {
	t.Helper()
	root := &pqRoot{n: n}
	h := &relay.Handler{Schema: graphql.MustParseSchema(pqSchema, root, graphql.UseFieldResolvers())}
	var reqs atomic.Int64
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		raw, _ := io.ReadAll(r.Body)
		var b map[string]any
		if err := json.Unmarshal(raw, &b); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if _, ok := b["query"]; !ok {
			ext, _ := b["extensions"].(map[string]any)
			pq, _ := ext["persistedQuery"].(map[string]any)
			if pq["sha256Hash"] != pqHash {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}]}`)
				return
			}
			b["query"] = pqQuery
		}
		raw, _ = json.Marshal(b)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		h.ServeHTTP(w, r)
	}))
	return url, root, &reqs
}

// pqJob pages the API with the persisted query (no query in the body);
// extra goes under source, target is the target URL and table.
func pqJob(url, extra, target, table, deletes string) string {
	return fmt.Sprintf(`name: pq
source:
  url: %s
  method: POST
  body:
    operationName: Items
    variables: {page: 1}
    extensions: {persistedQuery: {version: 1, sha256Hash: %s}}
  records: data.items
%spagination: {style: page, in: body, param: variables.page}
retry: {attempts: 3, min_wait: 1ms, max_wait: 5ms}
target: {url: "%s", table: %s, key: [id], deletes: %s}
`, url, pqHash, extra, target, table, deletes)
}

// A persisted query (operationName and extensions, no query) whose page 3
// answers 200 with errors and data.items null: the errors array fails the
// page by default for any POST (docs/job-file.md, error_path), so the run
// exits 3 naming it and the sweep deletes nothing. Before, the body got
// no default error_path: the null page ended the walk, exit 0, and
// deletes: hard removed items 21-25. On SQLite and PostgreSQL.
func TestGraphQLPersistedNoSweep(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			url, root, _ := pqServer(t, 25)
			dir := t.TempDir()
			target, pgURL, schema, table := "sqlite:out.db", "", "", "items"
			if db == "postgres" {
				pgURL = postgresURL(t)
				schema = freshSchema(t, pgURL)
				target, table = pgURL, schema+".items"
			}
			job := writeJob(t, dir, "job.yaml", pqJob(url, "", target, table, "hard"))
			runCode(t, dir, nil, 0, "run", job)
			root.set(func(r *pqRoot) { r.failPage = 3 })
			r := idemsync(t, dir, nil, "run", job, "--json")
			if r.code != 3 || !strings.Contains(r.stderr, "error payload at errors") || !strings.Contains(r.stderr, "upstream timeout") {
				t.Errorf("page 3 answering errors: exit %d, want 3 naming the errors payload\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			assertItems(t, readItems(t, filepath.Join(dir, "out.db"), pgURL, schema), wantItems(25, func(i int) string { return fmt.Sprintf("item %d", i) }))
		})
	}
}

// GraphQL request errors are permanent: exit 1 after one request, with a
// message naming the error and a hint that retrying cannot help. A query
// graph-gophers refuses in validation (errors, no data), a resolver's
// BAD_USER_INPUT (errors with data null) and an unknown persisted query
// (PERSISTED_QUERY_NOT_FOUND). Before, each was retried and ended in exit 3.
func TestGraphQLRequestErrorsArePermanent(t *testing.T) {
	for _, c := range []struct {
		name, want string
		job        func(url string) string
		setup      func(r *pqRoot)
	}{
		{"validation", "Cannot query field", func(url string) string {
			return strings.Replace(pqJob(url, "", "sqlite:out.db", "items", "keep"),
				"    operationName: Items\n", "    query: \"query Items($page: Int!) { items(page: $page, size: 10) { id nope } }\"\n", 1)
		}, nil},
		{"bad user input", "BAD_USER_INPUT", func(url string) string { return pqJob(url, "", "sqlite:out.db", "items", "keep") },
			func(r *pqRoot) { r.failPage, r.failCode = 1, "BAD_USER_INPUT" }},
		{"unknown persisted query", "PERSISTED_QUERY_NOT_FOUND", func(url string) string {
			return strings.Replace(pqJob(url, "", "sqlite:out.db", "items", "keep"), "sha256Hash: "+pqHash, "sha256Hash: 000000", 1)
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, root, reqs := pqServer(t, 25)
			if c.setup != nil {
				root.set(c.setup)
			}
			dir := t.TempDir()
			r := idemsync(t, dir, nil, "run", writeJob(t, dir, "job.yaml", c.job(url)))
			if r.code != 1 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "cannot help") {
				t.Errorf("exit %d, want 1 naming %q with the hint\nstderr: %s", r.code, c.want, r.stderr)
			}
			if n := reqs.Load(); n != 1 {
				t.Errorf("%d requests, want 1 (not retried)", n)
			}
		})
	}
}

// Partial data (one item's nullable note failing) fails the whole page by
// default (exit 3); error_path: "errors.#(path.#<3)#" (documented in
// docs/job-file.md) keeps failing on errors of the list itself but
// lets an error inside one item through (its note is NULL), and
// error_path: "" turns the check off.
func TestGraphQLPartialData(t *testing.T) {
	for _, c := range []struct {
		name, errorPath string
		code            int
	}{
		{"default", "", 3},
		{"filter", `  error_path: "errors.#(path.#<3)#"` + "\n", 0},
		{"off", `  error_path: ""` + "\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, root, _ := pqServer(t, 25)
			root.set(func(r *pqRoot) { r.noteErr = 17 })
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", pqJob(url, c.errorPath, "sqlite:out.db", "items", "keep"))
			r := idemsync(t, dir, nil, "run", job)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, c.code, r.stderr)
			}
			if c.code != 0 {
				if !strings.Contains(r.stderr, "note service unavailable") {
					t.Errorf("the error does not name the field's error:\n%s", r.stderr)
				}
				return
			}
			rows, err := openSQLite(t, filepath.Join(dir, "out.db")).Query(`SELECT id, note FROM items ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			n := 0
			for rows.Next() {
				var id int
				var note *string
				if err := rows.Scan(&id, &note); err != nil {
					t.Fatal(err)
				}
				n++
				if (note == nil) != (id == 17) {
					t.Errorf("id %d: note %v, want NULL only for 17", id, note)
				}
			}
			if n != 25 {
				t.Errorf("%d rows, want 25", n)
			}
			// An error of the list itself still fails the page.
			root.set(func(r *pqRoot) { r.failPage = 2 })
			if c.name == "filter" {
				if r := idemsync(t, dir, nil, "run", job); r.code != 3 {
					t.Errorf("the list failing under the filter: exit %d, want 3\n%s", r.code, r.stderr)
				}
			}
		})
	}
}
