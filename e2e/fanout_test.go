package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Clean runs of a two-resource job (orders → order_items) and a
// three-resource job (customers, orders, order_items) leave every table
// equal to the source; every parent's children route is asked, also for
// parents without children; a second run without changes walks no child.
func TestFanoutCleanRun(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		for _, c := range []struct {
			name string
			spec shopJob
		}{
			{"two", shopJob{parentStyle: "cursor", childStyle: "page"}},
			{"three", shopJob{customers: true, parentStyle: "page", childStyle: "cursor"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				if tgt.schema != "" {
					tgt = postgresTarget(t, tgt.url)
				}
				s, url := startShop(t, fakeapi.ShopOptions{Parents: 33, MaxChildren: 13, Seed: 12})
				dir := t.TempDir()
				c.spec.api, c.spec.target, c.spec.schema = url, tgt.url, tgt.schema
				job := writeJob(t, dir, "job.yaml", c.spec.yaml())
				j := runJob(t, dir, 0, "run", job)
				if j.Status != "completed" || j.resource(t, "order_items").Records != int64(len(s.AllChildren())) {
					t.Errorf("first run: %+v", j)
				}
				asked := childRequestCounts(s)
				for _, p := range s.Parents() {
					if asked[p.ID] == 0 {
						t.Errorf("children of parent %d (%d of them) never asked", p.ID, len(s.Children(p.ID)))
					}
				}
				assertShop(t, tgt, dir, s, c.spec.customers)

				s.ResetCounters()
				j = runJob(t, dir, 0, "run", job)
				if got := childRequestCounts(s); len(got) != 0 {
					t.Errorf("a run without changes fetched children of %d parents: %v", len(got), got)
				}
				if r := j.resource(t, "order_items"); r.Status != "completed" || r.Inserted+r.Updated != 0 {
					t.Errorf("order_items on a run without changes: %+v", r.runJSON)
				}
				assertShop(t, tgt, dir, s, c.spec.customers)
			})
		}
	})
}

// parent_rows: changed walks the children of the parents the parent's run
// inserted or updated, and only those: a parent whose child was added,
// updated or touched, a parent changed itself, a new parent.
func TestFanoutChangedWalksOnlyChangedParents(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 30, MaxChildren: 10, Seed: 13})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, schema: tgt.schema, parentRows: "changed"}.yaml())
		runJob(t, dir, 0, "run", job)

		s.AddChildren(3, 2)
		s.UpdateChild(2, s.Children(2)[0].ID)
		s.TouchParent(8)
		s.UpdateParent(9)
		added := s.AddParents(1, 10)
		want := []int{2, 3, 8, 9, added[0].ID}
		s.ResetCounters()
		j := runJob(t, dir, 0, "run", job)
		got := slices.Sorted(maps.Keys(childRequestCounts(s)))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("children fetched for parents %v, want %v", got, want)
		}
		for _, id := range want {
			if n, min := s.ChildRequests(id), len(s.Children(id))/4+1; n < min || n > min+1 {
				t.Errorf("parent %d: %d child requests, want %d (one walk of its pages)", id, n, min)
			}
		}
		if r := j.resource(t, "orders"); r.Inserted != 1 || r.Updated != 4 {
			t.Errorf("orders: %d inserted, %d updated; want 1, 4", r.Inserted, r.Updated)
		}
		assertShop(t, tgt, dir, s, false)
	})
}

// parent_rows: all walks the children of every parent on every run.
func TestFanoutAllWalksEveryParent(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 25, Seed: 14})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, parentRows: "all"}.yaml())
	runJob(t, dir, 0, "run", job)
	s.AddChildren(5, 1)
	s.ResetCounters()
	j := runJob(t, dir, 0, "run", job)
	if got := childRequestCounts(s); len(got) != 25 {
		t.Errorf("parent_rows: all fetched children of %d parents, want 25", len(got))
	}
	if r := j.resource(t, "order_items"); r.Inserted != 1 || r.Records != int64(len(s.AllChildren())) {
		t.Errorf("order_items: %+v", r.runJSON)
	}
	assertShop(t, tgt, dir, s, false)
}

// A 404 for one parent's children under on_bad_record: fail makes the job
// exit 1 naming the parent, while the parent resource completed; after the
// fix, the next run continues the child walk at that parent.
func TestFanoutChild404Fails(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 30, MaxChildren: 6, Seed: 15, NotFound: []int{17}})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, schema: tgt.schema, onBad: "fail"}.yaml())
		j := runJob(t, dir, 1, "run", job)
		items := j.resource(t, "order_items")
		if j.Status == "completed" || j.resource(t, "orders").Status != "completed" || items.Status != "failed" {
			t.Errorf("with parent 17's children missing: job %s, orders %s, order_items %s",
				j.Status, j.resource(t, "orders").Status, items.Status)
		}
		if !strings.Contains(items.Error, "17") || !strings.Contains(items.Error, "404") {
			t.Errorf("order_items error does not name parent 17 and the 404: %q", items.Error)
		}
		for _, p := range s.Parents() {
			if p.ID > 17 && s.ChildRequests(p.ID) > 0 {
				t.Errorf("children of parent %d fetched after parent 17 failed", p.ID)
			}
		}

		s.SetNotFound(17, false)
		s.ResetCounters()
		j = runJob(t, dir, 0, "run", job)
		if r := j.resource(t, "order_items"); r.RunID != items.RunID || r.Status != "completed" {
			t.Errorf("order_items after the fix: run %d %s, want run %d continued", r.RunID, r.Status, items.RunID)
		}
		for id, n := range childRequestCounts(s) {
			if id < 17 {
				t.Errorf("after the fix, children of parent %d fetched again (%d requests)", id, n)
			}
		}
		assertShop(t, tgt, dir, s, false)
	})
}

// Under on_bad_record: skip the parent whose children 404 becomes a dead
// letter of the child resource; every other parent's children are synced.
func TestFanoutChild404Skipped(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 20, MaxChildren: 6, Seed: 16, NotFound: []int{2}})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, onBad: "skip"}.yaml())
	j := runJob(t, dir, 0, "run", job)
	if j.Status != "completed" {
		t.Errorf("job %s with a skipped parent", j.Status)
	}
	st := statusEntries(t, dir, job)
	if st["order_items"].DeadLetters < 1 {
		t.Errorf("order_items has %d dead letters, want the 404 of parent 2", st["order_items"].DeadLetters)
	}
	if d := diffTables(tgt.read(t, dir, "orders", 1, ordersCols...), wantOrders(s.Parents())); d != "" {
		t.Errorf("orders: %s", d)
	}
	var kept []fakeapi.ShopChild
	for _, c := range s.AllChildren() {
		if c.ParentID != 2 {
			kept = append(kept, c)
		}
	}
	if d := diffTables(tgt.read(t, dir, "order_items", 2, itemsCols...), wantOrderItems(kept)); d != "" {
		t.Errorf("order_items of the other parents: %s", d)
	}
}

// fanout_concurrency: N walks the children of up to N parents at once
// (and 1 of one at a time), and the tables still equal the source.
func TestFanoutConcurrency(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		for _, n := range []int{1, 4} {
			t.Run(strconv.Itoa(n), func(t *testing.T) {
				if tgt.schema != "" {
					tgt = postgresTarget(t, tgt.url)
				}
				s, url := startShop(t, fakeapi.ShopOptions{Parents: 24, MaxChildren: 9, Seed: 17})
				dir := t.TempDir()
				job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, schema: tgt.schema, fanout: n}.yaml())
				s.SetLatency(15 * time.Millisecond)
				runJob(t, dir, 0, "run", job)
				if got := s.MaxInFlight(); (n == 1 && got != 1) || (n > 1 && (got < 2 || got > n)) {
					t.Errorf("fanout_concurrency %d: %d requests in flight at most", n, got)
				}
				assertShop(t, tgt, dir, s, false)
			})
		}
	})
}
