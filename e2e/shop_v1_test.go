package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// v1OrdersJob is a v1 job file (source: at the top level) over the shop's
// orders, with the columns the fan-out tests read back.
func v1OrdersJob(api string, tgt shopTarget, style string) string {
	table := "orders"
	if tgt.schema != "" {
		table = tgt.schema + ".orders"
	}
	return fmt.Sprintf(`name: orders
source: {url: %q, records: data, timeout: 5s}
pagination: %s
retry: {attempts: 3, min_wait: 5ms, max_wait: 50ms}
target:
  url: %q
  table: %s
  key: [id]
  columns: {id: {path: id, type: integer}, customer_id: {path: customer_id, type: integer}, status: {path: status, type: text}, updated_at: {path: updated_at, type: text}}
`, api+"/orders", shopPagination(style, 7), tgt.url, table)
}

// A v1 job over the shop's parent route: the shop API, its page and cursor
// styles, and the harness that reads tables back, without fan-out.
func TestShopV1ParentJob(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		for _, style := range []string{"page", "cursor"} {
			t.Run(style, func(t *testing.T) {
				s, url := startShop(t, fakeapi.ShopOptions{Parents: 23, Seed: 5})
				dir := t.TempDir()
				if tgt.schema != "" {
					tgt = postgresTarget(t, tgt.url) // a schema per style
				}
				job := writeJob(t, dir, "job.yaml", v1OrdersJob(url, tgt, style))
				r := runCode(t, dir, nil, 0, "run", job)
				if r.Status != "completed" || r.Records != 23 {
					t.Fatalf("run: %+v", r)
				}
				if d := diffTables(tgt.read(t, dir, "orders", 1, ordersCols...), wantOrders(s.Parents())); d != "" {
					t.Fatalf("orders differ from the source: %s", d)
				}
				s.UpdateParent(4)
				s.AddChildren(9, 1)
				r = runCode(t, dir, nil, 0, "run", job)
				if r.Updated != 2 || r.Unchanged != 21 {
					t.Errorf("second run updated %d, unchanged %d; want 2, 21", r.Updated, r.Unchanged)
				}
				if d := diffTables(tgt.read(t, dir, "orders", 1, ordersCols...), wantOrders(s.Parents())); d != "" {
					t.Fatalf("orders differ from the source after changes: %s", d)
				}
			})
		}
	})
}

// A v1 file keeps working unchanged next to v2 ones: its --json is the v1
// run object, and status has one entry named after the job.
func TestV1FileKeepsWorking(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 120})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	res := idemsync(t, dir, nil, "run", job, "--json")
	r := parseRun(t, res)
	if res.code != 0 || r.Status != "completed" || r.Job != "orders-page" || r.Records != 120 {
		t.Fatalf("v1 run: exit %d %+v", res.code, r)
	}
	if strings.Contains(res.stdout, `"resources"`) {
		t.Errorf("a v1 run printed the multi-resource object: %s", res.stdout)
	}
	if st := statusOf(t, dir, job); st.Name != "orders-page" || st.Status != "completed" {
		t.Errorf("v1 status: %+v", st)
	}
	assertEqualSource(t, readSQLite(t, dir+"/out.db"), sourceRows(api))
}

// One order's items as a v1 job (the order id fixed in the URL): the
// child route's page and cursor walks, and how many requests one walk of a
// parent's children takes, which the fan-out tests count on.
func TestShopV1ChildJob(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 3, MaxChildren: 9, Seed: 5})
	for _, style := range []string{"page", "cursor"} {
		for _, id := range []int{1, 2} { // no items; 9 items
			t.Run(fmt.Sprintf("%s/%d", style, id), func(t *testing.T) {
				dir := t.TempDir()
				job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: items
source: {url: %q, records: data, timeout: 5s}
pagination: %s
target:
  url: sqlite:out.db
  table: order_items
  key: [order_id, id]
  columns: {order_id: {path: id, type: integer}, id: {path: id, type: integer}, sku: {path: sku, type: text}, qty: {path: qty, type: integer}, updated_at: {path: updated_at, type: text}}
`, url+s.ChildPath(id), shopPagination(style, 4)))
				s.ResetCounters()
				r := runCode(t, dir, nil, 0, "run", job)
				kids := s.Children(id)
				want := len(kids)/4 + 1 // page: full pages, then the empty one...
				if len(kids)%4 != 0 {
					want++ // ...or the short one and the empty one that proves it the last
				}
				if style == "cursor" {
					want = max(1, (len(kids)+3)/4) // cursor: until next_cursor is null
				}
				if r.Records != int64(len(kids)) || s.ChildRequests(id) != want {
					t.Errorf("%d records in %d requests, want %d in %d", r.Records, s.ChildRequests(id), len(kids), want)
				}
				got := sqliteTarget().read(t, dir, "order_items", 2, "id", "sku", "qty", "updated_at")
				if len(got) != len(kids) {
					t.Errorf("%d rows, want %d", len(got), len(kids))
				}
			})
		}
	}
}
