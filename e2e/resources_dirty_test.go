package e2e

import (
	"strconv"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A child whose parent wrote rows after the child's last run began runs
// again before the job may say completed, whatever wrote them: here a
// --resource run of the parent between two invocations of a cycle left
// open by --max-pages (customers, last in the file, stopped short).
func TestResourcesChildRunsAfterParentWrites(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 6, MaxChildren: 4, Seed: 41})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", severityJob(shopJob{api: url, target: "sqlite:out.db", parentSize: 3, childSize: 2}))
	// Slices of 2 pages until orders and order_items completed in this
	// cycle while customers has not.
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("orders and order_items never completed ahead of customers")
		}
		j := runJob(t, dir, 0, "run", job, "--max-pages", "2")
		if j.Status == "completed" {
			t.Fatal("the cycle completed in one slice; the test needs customers cut short")
		}
		st := statusEntries(t, dir, job)
		if st["order_items"].Status == "completed" && st["customers"].Status != "completed" {
			break
		}
	}
	added := s.AddParents(2, 4)
	runJob(t, dir, 0, "run", job, "--resource", "orders")
	j := runJob(t, dir, 0, "run", job)
	if j.Status != "completed" {
		t.Fatalf("job %s", j.Status)
	}
	for _, p := range added {
		if len(s.Children(p.ID)) > 0 && s.ChildRequests(p.ID) == 0 {
			t.Errorf("the children of order %d, added after order_items ran, were never asked", p.ID)
		}
	}
	assertShop(t, sqliteTarget(), dir, s, true)
}

// Whatever the slice a --max-pages invocation gets, a job it reports
// completed has every table equal to the source: here a child continued
// in the first round while its parent, run after it, inserts new parents
// whose children the limit may leave unwalked (the job is then partial).
func TestResourcesCompletedOnlyWhenChildrenCaughtUp(t *testing.T) {
	for k := 1; k <= 24; k++ {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 5, MaxChildren: 3, Seed: 43})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: "sqlite:out.db", parentSize: 2, childSize: 2}.yaml())
		runJob(t, dir, 0, "run", job)
		runJob(t, dir, 0, "run", job, "--resource", "order_items", "--restart", "--max-pages", "1")
		s.AddParents(2, 3)
		j := runJob(t, dir, 0, "run", job, "--max-pages", strconv.Itoa(k))
		if j.Status != "completed" {
			continue
		}
		assertShop(t, sqliteTarget(), dir, s, false)
		if t.Failed() {
			t.Fatalf("--max-pages %d: the job said completed over a hole: %+v", k, j.Resources)
		}
	}
}
