package sync_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"testing"

	"github.com/idemsync/idemsync/checkpoint"
	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
	"github.com/idemsync/idemsync/sink"
	httpsource "github.com/idemsync/idemsync/source/http"
	idsync "github.com/idemsync/idemsync/sync"
)

// The engine's fan-out with the real parts: a job file with resources
// loaded by jobfile, the HTTP fetcher against an httptest API, the state
// file and SQLite, wired as a runner does: each resource's Job run by its
// own Engine, parents before children.

// shopAPI serves orders (id, code) in pages of per_page, and each order's
// items; it counts the requests per path.
type shopAPI struct {
	mu     gosync.Mutex
	orders []string       // codes of orders 1..n
	items  map[int]int    // items per order
	hits   map[string]int // requests per path
	status map[string]int // a path answered with this status
}

func (a *shopAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hits[r.URL.EscapedPath()]++
	if st := a.status[r.URL.EscapedPath()]; st != 0 {
		w.WriteHeader(st)
		fmt.Fprint(w, `{"error":"no such order"}`)
		return
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	size, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	var recs []string
	if r.URL.Path == "/orders" {
		for i, code := range a.orders {
			recs = append(recs, fmt.Sprintf(`{"id":%d,"code":%q}`, i+1, code))
		}
	} else {
		var o int
		if _, err := fmt.Sscanf(r.URL.Path, "/orders/%d/items", &o); err != nil {
			http.NotFound(w, r)
			return
		}
		for i := range a.items[o] {
			recs = append(recs, fmt.Sprintf(`{"id":%d,"sku":"s%d-%d"}`, i+1, o, i+1))
		}
	}
	from := min((page-1)*size, len(recs))
	to := min(from+size, len(recs))
	fmt.Fprintf(w, `{"data":[%s]}`, strings.Join(recs[from:to], ","))
}

func (a *shopAPI) hit(path string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hits[path]
}

func (a *shopAPI) reset(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hits = map[string]int{}
	f()
}

const shopJob = `
name: shop
defaults:
  source: {base_url: "%s", records: data}
  pagination: {style: page, size: 2, size_param: per_page}
  retry: {attempts: 1}
  target: {url: "sqlite:shop.db", on_bad_record: %s}
resources:
  - name: orders
    source: {path: /orders}
    target: {table: orders, key: [id], columns: {id: {path: id, type: integer}, code: code}}
  - name: items
    parent: orders
    source: {path: "/orders/{parent.id}/items", headers: {X-Code: "{parent.code}"}}
    target:
      table: order_items
      key: [order_id, id]
      columns: {order_id: {parent: id}, code: {parent: code}, id: {path: id, type: integer}, sku: sku}
`

// shopRig loads the shop job file (a state file and an SQLite target in a
// temporary folder) against api.
func shopRig(t *testing.T, api *shopAPI, onBad string) ([]jobfile.Resource, *checkpoint.Store) {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	file := filepath.Join(dir, "shop.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(shopJob, srv.URL, onBad)), 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := jobfile.LoadResources([]byte(fmt.Sprintf(shopJob, srv.URL, onBad)), file, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs { // the state file's job names take no dot yet
		r.Job.Name = strings.ReplaceAll(r.Job.Name, ".", "-")
		if r.Job.Parent != nil {
			r.Job.Parent.Name = strings.ReplaceAll(r.Job.Parent.Name, ".", "-")
		}
	}
	store, err := checkpoint.Open(context.Background(), filepath.Join(dir, "state.db"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return rs, store
}

// runResource runs one resource as the runner does.
func runResource(t *testing.T, r jobfile.Resource, store *checkpoint.Store, o idsync.Options) (*idsync.Result, error) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testLog{t}, nil))
	eng := &idsync.Engine{Job: r.Job, Store: store, Logger: log,
		Source: httpsource.NewFetcher(httpsource.ConfigOf(r.Job), log),
		OpenSink: func(ctx context.Context) (contract.Sink, error) {
			return sink.OpenTarget(ctx, r.Job.Target.Conn(), log)
		}}
	return eng.Run(context.Background(), o)
}

// itemRows reads order_items back as "order_id/id/code/sku", in key order.
func itemRows(t *testing.T, r jobfile.Resource) string {
	t.Helper()
	s, err := sink.OpenTarget(context.Background(), r.Job.Target.Conn(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.(contract.ParentReader).ParentRows(context.Background(), &r.Job.Table, []string{"order_id", "id", "code", "sku"}, contract.ParentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, *r[0]+"/"+*r[1]+"/"+*r[2]+"/"+*r[3])
	}
	return strings.Join(out, " ")
}

func TestFanOutRealParts(t *testing.T) {
	api := &shopAPI{orders: []string{"a/1", "b 2", "c"}, items: map[int]int{1: 3, 2: 0, 3: 1}, hits: map[string]int{}}
	rs, store := shopRig(t, api, "fail")
	run := func(o idsync.Options) {
		t.Helper()
		for _, r := range rs {
			if res, err := runResource(t, r, store, o); err != nil || res.Status != contract.RunCompleted {
				t.Fatalf("resource %s: %+v, %v", r.Name, res, err)
			}
		}
	}
	run(idsync.Options{})
	if got, want := itemRows(t, rs[1]), "1/1/a/1/s1-1 1/2/a/1/s1-2 1/3/a/1/s1-3 3/1/c/s3-1"; got != want {
		t.Errorf("items %q, want %q", got, want)
	}
	// order 2 changes (its code) and gains items: the next run walks order 2 only
	api.reset(func() { api.orders[1], api.items[2] = "b2", 2 })
	run(idsync.Options{})
	if api.hit("/orders/1/items") != 0 || api.hit("/orders/3/items") != 0 || api.hit("/orders/2/items") != 2 {
		t.Errorf("second run's requests %v: want order 2's items only", api.hits)
	}
	if got, want := itemRows(t, rs[1]), "1/1/a/1/s1-1 1/2/a/1/s1-2 1/3/a/1/s1-3 2/1/b2/s2-1 2/2/b2/s2-2 3/1/c/s3-1"; got != want {
		t.Errorf("items %q, want %q", got, want)
	}
	// a run stopped after every page resumes where it stopped
	api.reset(func() {})
	rs[1].Job.Parent.Rows = idsync.ParentRowsAll
	for n := 0; ; n++ {
		res, err := runResource(t, rs[1], store, idsync.Options{MaxPages: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status == contract.RunCompleted {
			break
		}
		if n > 20 {
			t.Fatal("the walk does not end")
		}
	}
	status, _ := store.Job(context.Background(), rs[1].Job.Name)
	// order 1: pages 1 and 2 (short); order 2: page 1 and the empty page 2; order 3: one short page
	if r := status.LastRun; !strings.Contains(r.Checkpoint, `"end":true`) || r.Pages != 5 || r.Records != 6 {
		t.Errorf("run %+v: want 5 pages, 6 records, each committed once", r)
	}
}

// A 404 for an order's items: exit 1 naming the order under fail; a dead
// letter under skip.
func TestFanOutRealParts404(t *testing.T) {
	for _, onBad := range []string{"fail", "skip"} {
		t.Run(onBad, func(t *testing.T) {
			api := &shopAPI{orders: []string{"a", "b", "c"}, items: map[int]int{1: 1, 3: 1}, hits: map[string]int{},
				status: map[string]int{"/orders/2/items": 404}}
			rs, store := shopRig(t, api, onBad)
			if _, err := runResource(t, rs[0], store, idsync.Options{}); err != nil {
				t.Fatal(err)
			}
			res, err := runResource(t, rs[1], store, idsync.Options{})
			if onBad == "fail" {
				if contract.ClassOf(err) != contract.Permanent || !strings.Contains(err.Error(), "parent orders id=2") || !strings.Contains(err.Error(), "404") {
					t.Fatalf("run: %v; want exit 1 naming parent orders id=2 and the 404", err)
				}
				t.Logf("error: %v", err)
				return
			}
			if err != nil || res.Skipped != 1 {
				t.Fatalf("run: %+v, %v", res, err)
			}
			dead, _ := store.DeadLetters(context.Background(), rs[1].Job.Name, 0)
			if len(dead) != 1 || !strings.Contains(dead[0].Reason, "parent orders id=2") {
				t.Errorf("dead letters %+v", dead)
			}
			if got := itemRows(t, rs[1]); got != "1/1/a/s1-1 3/1/c/s3-1" {
				t.Errorf("items %q", got)
			}
		})
	}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
