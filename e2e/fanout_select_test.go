package e2e

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// exec runs a statement on the target (rows it returns are ignored).
func (tgt shopTarget) exec(t *testing.T, dir, q string) {
	t.Helper()
	query, done := tgt.db(t, dir)
	defer done()
	if _, err := query(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// A --resource selection of a child whose parent's run is unfinished skips
// the child as a whole-file run does (docs/job-file.md, "Order and
// cycles"): the parent table holds only what the parent's run has written
// back so far, and a full pass of the child over it would sweep the
// children of the parents not yet written.
func TestFanoutChildWaitsParent(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 12, MaxChildren: 5, Seed: 31})
		dir := t.TempDir()
		spec := shopJob{api: url, target: tgt.url, schema: tgt.schema, parentRows: "all", deletes: "hard"}
		job := writeJob(t, dir, "job.yaml", spec.yaml())
		runJob(t, dir, 0, "run", job)
		assertShop(t, tgt, dir, s, false)

		// The parent's table is being written again (as after a lost
		// table) and its run stops after one page: orders 8..12 are not
		// back yet.
		tgt.exec(t, dir, "DELETE FROM "+spec.table("orders")+" WHERE id > 7")
		if j := runJob(t, dir, 0, "run", job, "--resource", "orders", "--max-pages", "1"); j.resource(t, "orders").Status != "partial" {
			t.Fatalf("orders after --max-pages 1: %+v", j.Resources)
		}
		// A whole-file run whose parent fails again skips the child.
		s.SetFailing("/orders", 503)
		whole := runJob(t, dir, 3, "run", job).resource(t, "order_items")
		s.SetFailing("/orders", 0)
		if whole.Status != "skipped" {
			t.Fatalf("whole-file run: order_items %+v, want skipped", whole)
		}

		s.ResetCounters()
		items := len(tgt.read(t, dir, "order_items", 2, itemsCols...))
		j := runJob(t, dir, 0, "run", job, "--resource", "order_items")
		r := j.resource(t, "order_items")
		if r.Status != whole.Status || r.Error != whole.Error || r.RunID != 0 || r.Deleted != 0 {
			t.Errorf("--resource order_items with orders unfinished: %+v, want as the whole-file run: %+v", r, whole)
		}
		if j.Status == "completed" {
			t.Errorf("the job says completed with its only resource skipped")
		}
		if n := len(childRequestCounts(s)); n != 0 {
			t.Errorf("children of %d parents fetched while the parent's run is unfinished", n)
		}
		if n := len(tgt.read(t, dir, "order_items", 2, itemsCols...)); n != items {
			t.Errorf("order_items has %d rows, had %d: the skipped child deleted live rows", n, items)
		}

		// Once the parent completes, the child runs.
		runJob(t, dir, 0, "run", job)
		assertShop(t, tgt, dir, s, false)
	})
}

// An invocation that runs no resource says so: here a --resource
// selection whose cycle was left open by --max-pages, then completed by a
// whole-file run. It fetches nothing and reports up_to_date, not a
// completed sync, and closes the cycle, so the next invocation syncs.
func TestFanoutSelectNothingLeft(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 12, MaxChildren: 3, Seed: 5})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, schema: tgt.schema, customers: true}.yaml())
		sel := []string{"--resource", "orders", "--resource", "order_items"}
		if j := runJob(t, dir, 0, append([]string{"run", job, "--max-pages", "2"}, sel...)...); j.Status != "partial" {
			t.Fatalf("the selection with --max-pages 2: %s %+v", j.Status, j.Resources)
		}
		runJob(t, dir, 0, "run", job)
		assertShop(t, tgt, dir, s, true)

		s.ResetCounters()
		j := runJob(t, dir, 0, append([]string{"run", job}, sel...)...)
		if n := s.TotalRequests(); n != 0 {
			t.Fatalf("the selection sent %d requests (%+v); the test needs one that runs nothing: %+v", n, s.RequestLog(), j)
		}
		if j.Status != "up_to_date" || !strings.Contains(j.Error, "no resource ran") {
			t.Errorf("an invocation that ran nothing: status %q error %q, want up_to_date with the reason", j.Status, j.Error)
		}
		for _, r := range j.Resources {
			if r.Status != "up_to_date" {
				t.Errorf("resource %s not run now reported %q (run %d), want up_to_date", r.Resource, r.Status, r.RunID)
			}
		}
		r := idemsync(t, dir, nil, append([]string{"run", job}, sel...)...)
		if r.code != 0 || s.TotalRequests() == 0 || !strings.Contains(r.stdout, "shop: completed") {
			t.Errorf("the next invocation did not sync: exit %d, %d requests\n%s%s", r.code, s.TotalRequests(), r.stdout, r.stderr)
		}
	})
}
