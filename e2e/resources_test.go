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

// `run JOB --resource NAME` runs only that resource; a child run on its own
// walks the parent's table as the parent's last run left it.
func TestResourceFlagRunsOnlyThatOne(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 12, Seed: 2})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, customers: true}.yaml())

	j := runJob(t, dir, 0, "run", job, "--resource", "customers")
	if len(j.Resources) != 1 || j.Resources[0].Resource != "customers" || j.Status != "completed" {
		t.Fatalf("--resource customers ran %+v", j)
	}
	if n := s.TotalRequests() - s.Requests("/customers"); n != 0 {
		t.Errorf("--resource customers sent %d requests elsewhere: %+v", n, s.RequestLog())
	}
	if d := diffTables(tgt.read(t, dir, "customers", 1, customersCols...), wantCustomers(s.Customers())); d != "" {
		t.Errorf("customers: %s", d)
	}
	if got := tgt.read(t, dir, "orders", 1, ordersCols...); len(got) != 0 {
		t.Errorf("--resource customers wrote %d orders", len(got))
	}

	s.ResetCounters()
	j = runJob(t, dir, 0, "run", job, "--resource", "orders")
	if len(j.Resources) != 1 || j.Resources[0].Resource != "orders" {
		t.Fatalf("--resource orders ran %+v", j)
	}
	if n := len(childRequestCounts(s)); n != 0 || s.Requests("/customers") != 0 {
		t.Errorf("--resource orders fetched children of %d parents and customers %d times", n, s.Requests("/customers"))
	}
	if st := statusEntries(t, dir, job)["order_items"]; st.Status != "never_run" {
		t.Errorf("order_items after --resource orders: %q, want never_run", st.Status)
	}

	s.ResetCounters()
	j = runJob(t, dir, 0, "run", job, "--resource", "order_items")
	if len(j.Resources) != 1 || j.Resources[0].Resource != "order_items" || j.Resources[0].Status != "completed" {
		t.Fatalf("--resource order_items ran %+v", j)
	}
	if s.Requests("/orders") != 0 || s.Requests("/customers") != 0 {
		t.Errorf("--resource order_items fetched /orders %d and /customers %d times", s.Requests("/orders"), s.Requests("/customers"))
	}
	if n := len(childRequestCounts(s)); n != 12 {
		t.Errorf("children of %d parents fetched, want all 12", n)
	}
	assertShop(t, tgt, dir, s, true)

	// Two --resource flags run both, parents before children.
	s.AddChildren(3, 1)
	s.ResetCounters()
	j = runJob(t, dir, 0, "run", job, "--resource", "order_items", "--resource", "orders")
	if len(j.Resources) != 2 || j.Resources[0].Resource != "orders" || j.Resources[1].Resource != "order_items" {
		t.Fatalf("--resource order_items --resource orders ran %+v", j.Resources)
	}
	if got := childRequestCounts(s); len(got) != 1 || got[3] == 0 {
		t.Errorf("child requests %v, want parent 3's only", got)
	}
	assertShop(t, tgt, dir, s, true)
}

// status shows a row per resource; status --json one entry per resource,
// each with the job's name and the resource's.
func TestStatusPerResource(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 9, Seed: 4})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: "sqlite:out.db", customers: true}.yaml())
	names := []string{"customers", "orders", "order_items"}

	before := statusEntries(t, dir, job)
	for _, n := range names {
		if e, ok := before[n]; !ok || e.Name != "shop" || e.Status != "never_run" {
			t.Errorf("status --json before any run, resource %s: %+v (present %v)", n, e, ok)
		}
	}
	if len(before) != 3 {
		t.Errorf("status --json before any run: %d entries, want 3", len(before))
	}

	runJob(t, dir, 0, "run", job)
	after := statusEntries(t, dir, job)
	if len(after) != 3 {
		t.Errorf("status --json: %d entries, want 3: %+v", len(after), after)
	}
	want := map[string]int64{"customers": 10, "orders": 9, "order_items": int64(len(s.AllChildren()))}
	for _, n := range names {
		e := after[n]
		if e.Name != "shop" || e.Resource != n || e.Status != "completed" || e.LastRun == nil {
			t.Errorf("status --json resource %s: %+v", n, e)
			continue
		}
		if e.LastRun.Records != want[n] {
			t.Errorf("resource %s: last run %d records, want %d", n, e.LastRun.Records, want[n])
		}
	}

	text := idemsync(t, dir, nil, "status", job)
	if text.code != 0 {
		t.Fatalf("status: exit %d: %s", text.code, text.stderr)
	}
	for _, n := range names {
		if c := strings.Count(text.stdout, n); c == 0 {
			t.Errorf("status names no row for resource %s:\n%s", n, text.stdout)
		}
	}
}

// The multi-resource --json object (SPEC §8): job, status, exit_code,
// duration_ms and one v1 run object per resource, in file order.
func TestResourcesAggregateJSON(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 15, Seed: 6})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: "sqlite:out.db", customers: true}.yaml())
	j := runJob(t, dir, 0, "run", job)
	if j.Job != "shop" || j.Status != "completed" || j.ExitCode != 0 || j.DurationMS < 0 {
		t.Errorf("job object %+v", j)
	}
	var order []string
	for _, r := range j.Resources {
		order = append(order, r.Resource)
		if r.Status != "completed" || r.RunID == 0 || r.Kind != "run" {
			t.Errorf("resource %s: %+v", r.Resource, r.runJSON)
		}
	}
	if strings.Join(order, ",") != "customers,orders,order_items" {
		t.Errorf("resources in order %v, want the file's", order)
	}
	if r := j.resource(t, "order_items"); r.Records != int64(len(s.AllChildren())) || r.Inserted != r.Records {
		t.Errorf("order_items: %d records, %d inserted; want %d", r.Records, r.Inserted, len(s.AllChildren()))
	}
	if r := j.resource(t, "orders"); r.Records != 15 {
		t.Errorf("orders: %d records, want 15", r.Records)
	}
}

// --max-pages counts the pages of the whole invocation, over all its
// resources; the next run continues the unfinished resource run where the
// last slice stopped.
func TestResourcesMaxPagesWholeInvocation(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 20, MaxChildren: 9, Seed: 8})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url}.yaml())
	// orders has 3 pages (7, 7, 6), order_items dozens: the first slice of
	// 4 is all of orders and the first page of items (order 1's, empty);
	// three slices stop short of the end.
	var last jobRunJSON
	for i := 1; i <= 3; i++ {
		last = runJob(t, dir, 0, "run", job, "--max-pages", "4")
		pages := int64(0)
		for _, r := range last.Resources {
			pages += r.Pages
		}
		if pages != 4 || last.Status == "completed" {
			t.Fatalf("slice %d: %d pages, status %q; want 4 pages and not completed: %+v", i, pages, last.Status, last.Resources)
		}
		if i == 1 {
			if o := last.resource(t, "orders"); o.Pages != 3 || o.Status != "completed" {
				t.Errorf("slice 1: orders %+v, want its 3 pages, completed", o.runJSON)
			}
		}
	}
	items := last.resource(t, "order_items")
	if items.Pages == 0 || items.Status == "completed" {
		t.Fatalf("order_items after three slices: %+v", items.runJSON)
	}
	s.ResetCounters()
	j := runJob(t, dir, 0, "run", job)
	if r := j.resource(t, "order_items"); r.RunID != items.RunID || r.Status != "completed" {
		t.Errorf("order_items: run %d %s, want run %d continued to the end", r.RunID, r.Status, items.RunID)
	}
	if n := s.ChildRequests(1); n != 0 {
		t.Errorf("the children of order 1, walked in the first slice, were fetched %d times again", n)
	}
	if j.Status != "completed" {
		t.Errorf("job %s after a run without --max-pages", j.Status)
	}
	assertShop(t, tgt, dir, s, false)
}

// Adding a resource to the file (here in front of the others) leaves the
// others' checkpoints, marks and unfinished runs as they were.
func TestAddingAResourceKeepsTheOthers(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 30, Seed: 9})
	tgt, dir := sqliteTarget(), t.TempDir()
	spec := shopJob{api: url, target: tgt.url, incremental: true}
	job := writeJob(t, dir, "job.yaml", spec.yaml())

	runJob(t, dir, 0, "run", job)
	before := statusEntries(t, dir, job)
	spec.customers = true
	writeJob(t, dir, "job.yaml", spec.yaml())
	after := statusEntries(t, dir, job)
	for _, n := range []string{"orders", "order_items"} {
		b, a := before[n], after[n]
		if b.LastRun == nil || a.LastRun == nil {
			t.Errorf("resource %s: no last run before (%v) or after (%v) customers was added", n, b.LastRun, a.LastRun)
			continue
		}
		if a.Status != b.Status || a.Checkpoint != b.Checkpoint || a.HWM != b.HWM || a.LastRun.RunID != b.LastRun.RunID {
			t.Errorf("resource %s changed when customers was added: before %+v, after %+v", n, b, a)
		}
	}
	if after["customers"].Status != "never_run" {
		t.Errorf("the new resource: %+v", after["customers"])
	}
	if before["orders"].HWM == "" {
		t.Fatal("orders saved no mark")
	}

	s.ResetCounters()
	j := runJob(t, dir, 0, "run", job)
	if r := j.resource(t, "orders"); r.Records >= 30 {
		t.Errorf("orders walked %d records after a resource was added: it started over from initial", r.Records)
	}
	for _, req := range s.RequestLog() {
		if req.Path == "/orders" && strings.HasPrefix(req.Query.Get("updated_since"), "2020-") {
			t.Errorf("orders asked from the initial mark again: %v", req.Query)
		}
	}
	if n := len(childRequestCounts(s)); n != 0 {
		t.Errorf("children of %d unchanged parents fetched", n)
	}
	assertShop(t, tgt, dir, s, true)
}

// An unfinished run of a resource continues where it stopped after a new
// resource was added to the file.
func TestAddingAResourceKeepsAnUnfinishedRun(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 40, Seed: 10})
	tgt, dir := sqliteTarget(), t.TempDir()
	spec := shopJob{api: url, target: tgt.url}
	job := writeJob(t, dir, "job.yaml", spec.yaml())
	first := runJob(t, dir, 0, "run", job, "--max-pages", "2").resource(t, "orders")
	if first.Status == "completed" || first.Pages != 2 {
		t.Fatalf("orders after --max-pages 2: %+v", first.runJSON)
	}
	spec.customers = true
	writeJob(t, dir, "job.yaml", spec.yaml())
	s.ResetCounters()
	j := runJob(t, dir, 0, "run", job)
	if r := j.resource(t, "orders"); r.RunID != first.RunID || r.Status != "completed" {
		t.Errorf("orders run %d (%s), want run %d continued", r.RunID, r.Status, first.RunID)
	}
	for _, req := range s.RequestLog() {
		if p := req.Query.Get("page"); req.Path == "/orders" && (p == "" || p == "1" || p == "2") {
			t.Errorf("orders fetched page %q again after a resource was added", p)
		}
	}
	assertShop(t, tgt, dir, s, true)
}

// The job's exit code is the most severe of its resources' (2 > 1 > 3 >
// 130 > 0): a transient failure of one resource while the others complete
// is 3; a child's permanent failure next to it is 1. The failing customers
// resource comes last in the file, so every failure below happens whether
// or not the runner goes on after a failed resource.
func TestResourcesMostSevereExitCode(t *testing.T) {
	t.Run("3", func(t *testing.T) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 10, Seed: 11})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", severityJob(shopJob{api: url, target: "sqlite:out.db", onBad: "fail"}))
		s.SetFailing("/customers", 503)
		j := runJob(t, dir, 3, "run", job)
		if j.Status == "completed" || j.resource(t, "customers").Status != "failed" {
			t.Errorf("with customers failing: %+v", j)
		}
		for _, n := range []string{"orders", "order_items"} {
			if r := j.resource(t, n); r.Status != "completed" {
				t.Errorf("resource %s: %s, want completed next to a failing resource", n, r.Status)
			}
		}
	})
	t.Run("1", func(t *testing.T) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 10, Seed: 11, NotFound: []int{4}})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", severityJob(shopJob{api: url, target: "sqlite:out.db", onBad: "fail"}))
		s.SetFailing("/customers", 503)
		j := runJob(t, dir, 1, "run", job)
		if j.Status == "completed" || j.resource(t, "orders").Status != "completed" || j.resource(t, "order_items").Status != "failed" {
			t.Errorf("with order 4's items missing and customers failing: %+v", j)
		}
	})
}

// severityJob is spec's job with a customers resource after the others.
func severityJob(spec shopJob) string {
	withCustomers := spec
	withCustomers.customers = true
	full := withCustomers.yaml()
	start := strings.Index(full, "  - name: customers\n")
	end := strings.Index(full, "  - name: orders\n")
	return spec.yaml() + full[start:end]
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
