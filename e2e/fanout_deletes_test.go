package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Deletions in a child resource (docs/job-file.md, "Parent → child fan-out",
// with docs/deletions.md): with parent_rows: all
// every run is a full pass, and a child gone from the source is deleted
// by the second pass that misses it (docs/deletions.md, "Two passes");
// a pass in which one parent's children answered 404 (a dead letter under
// on_bad_record: skip) deletes nothing, so a parent that fails for a while
// never loses its children's rows; with parent_rows: changed only run
// --full sweeps.
func TestFanoutDeletes(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 12, MaxChildren: 6, Seed: 31})
		dir := t.TempDir()
		spec := shopJob{api: url, target: tgt.url, schema: tgt.schema, parentRows: "all", deletes: "hard", onBad: "skip"}
		job := writeJob(t, dir, "job.yaml", spec.yaml())
		runJob(t, dir, 0, "run", job)
		assertShop(t, tgt, dir, s, false)

		// A child gone from the source is deleted by the next full pass.
		victim := s.Children(2)[0]
		if !s.DeleteChild(2, victim.ID) {
			t.Fatal("the fake shop did not delete the child")
		}
		j := runJob(t, dir, 0, "run", job)
		if r := j.resource(t, "order_items"); r.Status != "completed" || r.Deleted != 0 {
			t.Errorf("order_items at the first pass to miss a deleted child: %+v", r)
		}
		j = runJob(t, dir, 0, "run", job)
		if r := j.resource(t, "order_items"); r.Status != "completed" || r.Deleted != 1 {
			t.Errorf("order_items after a child was deleted: %+v", r)
		}
		assertShop(t, tgt, dir, s, false)

		// Parent 3's children answer 404 for a while: the pass skips it
		// with a dead letter and deletes none of its rows.
		before := len(s.Children(3))
		if before == 0 {
			t.Fatal("seed gives parent 3 no children; pick another")
		}
		s.SetNotFound(3, true)
		j = runJob(t, dir, 0, "run", job)
		if r := j.resource(t, "order_items"); r.Status != "completed" || r.Deleted != 0 {
			t.Errorf("order_items with parent 3's children missing: %+v", r)
		}
		items := tgt.read(t, dir, "order_items", 2, itemsCols...)
		n := 0
		for k := range items {
			if strings.HasPrefix(k, "3|") {
				n++
			}
		}
		if n != before {
			t.Errorf("parent 3 has %d child rows after its 404, want the %d it had", n, before)
		}
		s.SetNotFound(3, false)
		runJob(t, dir, 0, "run", job)
		assertShop(t, tgt, dir, s, false)

		// parent_rows: changed is no full pass: a deleted child stays until
		// run --full, which walks every parent and sweeps.
		spec.parentRows = "changed"
		writeJob(t, dir, "job.yaml", spec.yaml())
		runJob(t, dir, 0, "run", job, "--restart")
		gone := s.Children(5)[0]
		s.DeleteChild(5, gone.ID)
		s.TouchParent(5)
		j = runJob(t, dir, 0, "run", job)
		if r := j.resource(t, "order_items"); r.Deleted != 0 {
			t.Errorf("a changed-parents walk deleted %d rows", r.Deleted)
		}
		j = runJob(t, dir, 0, "run", job, "--full")
		if r := j.resource(t, "order_items"); r.Status != "completed" || r.Deleted != 0 {
			t.Errorf("the first run --full of order_items: %+v", r)
		}
		j = runJob(t, dir, 0, "run", job, "--full")
		if r := j.resource(t, "order_items"); r.Status != "completed" || r.Deleted != 1 {
			t.Errorf("run --full of order_items: %+v", r)
		}
		assertShop(t, tgt, dir, s, false)
	})
}

// Every parent deleted at the source: once the parent resource has removed
// them all, each pass of the child walks no parent (0 pages) and proves
// every child row absent. Two such passes remove the children like any
// two passes that miss a row (docs/deletions.md, "Two passes"); a pass
// that committed no page is a previous proving pass like another, with no
// key. Before, it was never taken for one, so the children of the last
// parents stayed for good while every run completed.
func TestFanoutEveryParentGone(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 3, MaxChildren: 3, Seed: 17})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url, schema: tgt.schema, parentRows: "all", deletes: "hard", parentDeletes: "hard"}.yaml())
		runJob(t, dir, 0, "run", job)
		runJob(t, dir, 0, "run", job)
		if len(s.AllChildren()) == 0 {
			t.Fatal("the shop has no items: pick another seed")
		}
		for _, p := range s.Parents() {
			s.DeleteParent(p.ID)
		}
		for range 2 { // the second pass to miss them removes them all
			runJob(t, dir, 0, "run", job, "--resource", "orders", "--allow-mass-delete")
		}
		if n := len(tgt.read(t, dir, "orders", 1, ordersCols...)); n != 0 {
			t.Fatalf("orders holds %d rows after two passes over an empty list", n)
		}
		j := runJob(t, dir, 0, "run", job, "--resource", "order_items", "--allow-mass-delete")
		if r := j.resource(t, "order_items"); r.Status != "completed" || r.Deleted != 0 {
			t.Errorf("order_items at the first pass with no parent: %+v, want completed with its rows pending", r)
		}
		j = runJob(t, dir, 0, "run", job, "--resource", "order_items", "--allow-mass-delete")
		if r := j.resource(t, "order_items"); r.Status != "completed" || r.Deleted == 0 {
			t.Errorf("order_items at the second pass with no parent: %+v, want its rows removed", r)
		}
		if d := diffTables(tgt.read(t, dir, "order_items", 2, itemsCols...), wantOrderItems(s.AllChildren())); d != "" {
			t.Errorf("order_items differ from the source: %s", d)
		}
	})
}

// A parent row marked deleted is never walked, whatever the parent's
// deletes says now: a mark says the record is gone (docs/deletions.md,
// "target.deletes"), and a job that changes from soft to keep keeps its
// marks. Before, the child walked the marked parent once the parent's
// deletes was no longer soft, and the 404 of its children failed every
// run (exit 1) naming a parent the parent table says is gone.
func TestFanoutMarkedParentAfterSoftChanged(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 6, MaxChildren: 3, Seed: 17})
		dir := t.TempDir()
		spec := shopJob{api: url, target: tgt.url, schema: tgt.schema, parentRows: "all", deletes: "hard", parentDeletes: "soft"}
		job := writeJob(t, dir, "job.yaml", spec.yaml())
		runJob(t, dir, 0, "run", job)
		if len(s.Children(3)) == 0 {
			t.Fatal("order 3 has no items: pick another seed")
		}
		s.DeleteParent(3)
		for range 2 { // the second pass to miss order 3 marks it
			runJob(t, dir, 0, "run", job, "--resource", "orders")
		}
		spec.parentDeletes = "keep"
		writeJob(t, dir, "job.yaml", spec.yaml())
		for i := range 2 { // the second pass to miss order 3's items removes them
			r := idemsync(t, dir, nil, "run", job, "--json")
			if r.code != 0 {
				t.Fatalf("run %d after orders' deletes changed from soft to keep: exit %d\n%s%s", i+1, r.code, r.stdout, r.stderr)
			}
		}
		if d := diffTables(tgt.read(t, dir, "order_items", 2, itemsCols...), wantOrderItems(s.AllChildren())); d != "" {
			t.Errorf("order_items differ from the source: %s", d)
		}
	})
}

// The parent table emptied by hand (DELETE FROM orders, or the table
// restored from an empty copy) while every parent is live at the source:
// the child's passes walk no parent, but nothing proves the parents gone,
// so they prove no child absent. However often the child runs alone, and
// with --allow-mass-delete, its sweep is skipped and says why; its rows
// stay (docs/deletions.md, "Two passes"). Before, two such passes removed
// every live child row.
func TestFanoutParentsEmptied(t *testing.T) {
	cases := []struct {
		name, parentRows, deletes string
		args                      []string
	}{
		{"all", "all", "hard", nil},
		{"changed", "changed", "soft", []string{"--full"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachTarget(t, func(t *testing.T, tgt shopTarget) {
				s, url := startShop(t, fakeapi.ShopOptions{Parents: 4, MaxChildren: 3, Seed: 17})
				dir := t.TempDir()
				spec := shopJob{api: url, target: tgt.url, schema: tgt.schema, parentRows: c.parentRows, deletes: c.deletes, parentDeletes: "hard"}
				job := writeJob(t, dir, "job.yaml", spec.yaml())
				runJob(t, dir, 0, append([]string{"run", job}, c.args...)...)
				runJob(t, dir, 0, append([]string{"run", job}, c.args...)...)
				if len(s.AllChildren()) == 0 {
					t.Fatal("the shop has no items: pick another seed")
				}
				tgt.exec(t, dir, "DELETE FROM "+spec.table("orders"))
				for i := range 3 {
					j := runJob(t, dir, 0, append([]string{"run", job, "--resource", "order_items", "--allow-mass-delete"}, c.args...)...)
					r := j.resource(t, "order_items")
					if r.Status != "completed" || r.Deleted != 0 || r.Sweep != "skipped" || !strings.Contains(r.SweepSkipped, "orders") {
						t.Errorf("order_items at pass %d over an orders table emptied by hand: %+v, want completed, nothing deleted, its sweep skipped naming orders", i+1, r)
					}
				}
				if d := diffTables(liveItems(t, tgt, dir, c.deletes), wantOrderItems(s.AllChildren())); d != "" {
					t.Errorf("order_items differ from the source: %s", d)
				}
				// The parents written back, the next pass proves again.
				j := runJob(t, dir, 0, append([]string{"run", job}, c.args...)...)
				if r := j.resource(t, "order_items"); r.Status != "completed" || r.Deleted != 0 || r.Sweep == "skipped" {
					t.Errorf("order_items once orders is written back: %+v, want completed, swept, nothing deleted", r)
				}
				if d := diffTables(liveItems(t, tgt, dir, c.deletes), wantOrderItems(s.AllChildren())); d != "" {
					t.Errorf("order_items differ from the source once orders is written back: %s", d)
				}
			})
		})
	}
}

// liveItems reads order_items' rows not marked deleted (deletes: soft
// marks them in _idemsync_deleted_at).
func liveItems(t *testing.T, tgt shopTarget, dir, deletes string) shopTable {
	t.Helper()
	all := tgt.read(t, dir, "order_items", 2, itemsCols...)
	if deletes != "soft" {
		return all
	}
	gone := tgt.read(t, dir, "order_items", 2, "order_id", "id", "_idemsync_deleted_at")
	for k, v := range gone {
		if v != "" && v != "<nil>" {
			delete(all, k)
		}
	}
	return all
}

// Some rows of the parent table deleted by hand (or lost to a partial
// restore) while their records live at the source, no parent run
// pending: the child's passes run alone walk only the parents left, never
// list the children of the others, and prove nothing about them
// (docs/deletions.md, "Two passes"). However often the child runs alone,
// its sweep is skipped naming the parent table, and the children of the
// missing parents stay. Before, the second such pass removed them.
func TestFanoutParentsPartlyDeleted(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 12, MaxChildren: 3, Seed: 17})
		dir := t.TempDir()
		spec := shopJob{api: url, target: tgt.url, schema: tgt.schema, parentRows: "all", deletes: "hard", parentDeletes: "hard"}
		job := writeJob(t, dir, "job.yaml", spec.yaml())
		runJob(t, dir, 0, "run", job)
		runJob(t, dir, 0, "run", job)
		other := 0 // order 2 always has items; another one with items
		for id := 12; id > 2 && other == 0; id-- {
			if len(s.Children(id)) > 0 {
				other = id
			}
		}
		if other == 0 {
			t.Fatal("no order but 2 has items: pick another seed")
		}
		tgt.exec(t, dir, fmt.Sprintf("DELETE FROM %s WHERE id IN (2, %d)", spec.table("orders"), other))
		for i := range 3 {
			j := runJob(t, dir, 0, "run", job, "--resource", "order_items")
			r := j.resource(t, "order_items")
			if r.Status != "completed" || r.Deleted != 0 || r.Sweep != "skipped" || !strings.Contains(r.SweepSkipped, "orders") {
				t.Errorf("order_items at pass %d over an orders table missing orders 2 and %d: %+v, want completed, nothing deleted, its sweep skipped naming orders", i+1, other, r)
			}
		}
		if d := diffTables(tgt.read(t, dir, "order_items", 2, itemsCols...), wantOrderItems(s.AllChildren())); d != "" {
			t.Errorf("order_items differ from the source: %s", d)
		}
		// The parents written back, the child's next pass proves again.
		j := runJob(t, dir, 0, "run", job)
		if r := j.resource(t, "order_items"); r.Status != "completed" || r.Deleted != 0 || r.Sweep == "skipped" {
			t.Errorf("order_items once orders is written back: %+v, want completed, swept, nothing deleted", r)
		}
		// A parent gone at the source: the parent's own sweep removes it,
		// and two passes of the child alone remove its children.
		s.DeleteParent(2)
		for range 2 {
			runJob(t, dir, 0, "run", job, "--resource", "orders")
		}
		for range 2 {
			runJob(t, dir, 0, "run", job, "--resource", "order_items")
		}
		if d := diffTables(tgt.read(t, dir, "order_items", 2, itemsCols...), wantOrderItems(s.AllChildren())); d != "" {
			t.Errorf("order_items differ from the source once order 2 is gone: %s", d)
		}
	})
}
