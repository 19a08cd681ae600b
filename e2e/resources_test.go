package e2e

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

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

// The multi-resource --json object (docs/job-file.md, "Running a file with
// several resources"): job, status, exit_code, duration_ms and one v1 run
// object per resource, in file order.
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
// resources; invocations of N pages each finish the job.
func TestResourcesMaxPagesWholeInvocation(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 20, MaxChildren: 9, Seed: 8})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, customers: true}.yaml())
	before := map[int64]int64{} // pages of each run before this invocation
	for i := 1; ; i++ {
		if i > 200 {
			t.Fatal("no completion after 200 invocations of --max-pages 3")
		}
		j := runJob(t, dir, 0, "run", job, "--max-pages", "3")
		// A continued run reports its pages in all; this invocation's are
		// those beyond what the run had before.
		pages := int64(0)
		for _, r := range j.Resources {
			pages += r.Pages - before[r.RunID]
			before[r.RunID] = r.Pages
		}
		if pages > 3 {
			t.Fatalf("invocation %d committed %d pages with --max-pages 3: %+v", i, pages, j.Resources)
		}
		if i == 1 && (pages != 3 || j.Status == "completed") {
			t.Fatalf("first invocation: %d pages, status %q; want 3 pages and not completed", pages, j.Status)
		}
		if j.Status == "completed" {
			t.Logf("completed after %d invocations", i)
			break
		}
	}
	assertShop(t, tgt, dir, s, true)
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
