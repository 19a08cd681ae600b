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
// the child as a whole-file run does (docs/job-file.md, "Running a file
// with several resources", Failures): the parent table holds only what the parent's run has written
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
		// Skipped, as --if-running skip is: not partial, which says a
		// limit stopped the run (docs/operations.md, "--json output").
		if j.Status != "skipped" || j.ExitCode != 0 || !strings.Contains(j.Error, "orders") {
			t.Errorf("the job with its only resource skipped: status %q, exit %d, error %q; want skipped, 0, naming its parent", j.Status, j.ExitCode, j.Error)
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

// A parent value that can never be sent (CR/LF in a value put in a child
// header) is a bad record of that parent, never a transient failure that
// exit 3 would have retried forever: under on_bad_record: skip a dead
// letter naming the parent, the others walked, and no sweep (the pass did
// not see that parent's children); under fail, exit 1 naming the parent.
// Either way the parent's children stay.
func TestFanoutUnsendableParentValue(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		s, url := startShop(t, fakeapi.ShopOptions{Parents: 8, MaxChildren: 4, Seed: 31})
		dir := t.TempDir()
		spec := shopJob{api: url, target: tgt.url, schema: tgt.schema, parentRows: "all", deletes: "hard", onBad: "skip",
			childHeader: `{X-Order-Status: "{parent.status}"}`}
		job := writeJob(t, dir, "job.yaml", spec.yaml())
		runJob(t, dir, 0, "run", job)
		assertShop(t, tgt, dir, s, false)
		crlf := "char(13) || char(10)"
		if tgt.schema != "" {
			crlf = "chr(13) || chr(10)"
		}
		tgt.exec(t, dir, "UPDATE "+spec.table("orders")+" SET status = 'paid' || "+crlf+" || 'X-Evil: 1' WHERE id = 2")
		if len(s.Children(2)) == 0 {
			t.Fatal("order 2 has no items")
		}
		s.DeleteChild(4, s.Children(4)[0].ID) // a deletion the pass must not act on
		items := tgt.read(t, dir, "order_items", 2, itemsCols...)

		s.ResetCounters()
		j := runJob(t, dir, 0, "run", job, "--resource", "order_items")
		r := j.resource(t, "order_items")
		if r.Status != "completed" || r.Skipped != 1 || r.Deleted != 0 {
			t.Errorf("order_items with order 2's status unsendable: %+v", r)
		}
		if n := s.ChildRequests(2); n != 0 {
			t.Errorf("order 2's children were asked %d times", n)
		}
		dead := statusEntries(t, dir, job, "--dead-letters")["order_items"].Dead
		if len(dead) != 1 || !strings.Contains(dead[0].Reason, "parent orders id=2") || !strings.Contains(dead[0].Reason, "X-Order-Status") {
			t.Errorf("dead letters %+v, want one naming parent orders id=2 and the header", dead)
		}
		if d := diffTables(tgt.read(t, dir, "order_items", 2, itemsCols...), items); d != "" {
			t.Errorf("order_items changed by a pass that could not walk order 2: %s", d)
		}

		spec.onBad = "fail"
		writeJob(t, dir, "job.yaml", spec.yaml())
		res := idemsync(t, dir, nil, "run", job, "--resource", "order_items", "--restart")
		if res.code != 1 || !strings.Contains(res.stdout+res.stderr, "parent orders id=2") {
			t.Errorf("on_bad_record: fail: exit %d, want 1 naming parent orders id=2\n%s%s", res.code, res.stdout, res.stderr)
		}
		if d := diffTables(tgt.read(t, dir, "order_items", 2, itemsCols...), items); d != "" {
			t.Errorf("order_items changed by a failed pass: %s", d)
		}
	})
}

// A parent deleted at the source after a child run began, and removed by
// the parent resource since (hard-deleted or marked deleted), is no
// failure of the child: its children's 404 ends that parent's walk, the
// run completes, and the sweeps remove the parent and then its children
// (each at the second pass that misses it: docs/deletions.md, "Two
// passes"). A 404 of a parent still in the parent table fails as before, with
// a hint that says what to do.
func TestFanoutParentRemovedDuringChildRun(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		for _, mode := range []string{"hard", "soft"} {
			if tgt.schema != "" { // each mode's job is another writer: tables of its own
				tgt = postgresTarget(t, postgresURL(t))
			}
			s, url := startShop(t, fakeapi.ShopOptions{Parents: 10, MaxChildren: 4, Seed: 17})
			dir := t.TempDir()
			spec := shopJob{api: url, target: tgt.url, schema: tgt.schema, childSize: 2, parentRows: "all", deletes: "hard", parentDeletes: mode}
			job := writeJob(t, dir, "job.yaml", spec.yaml())
			runJob(t, dir, 0, "run", job)
			if len(s.Children(5)) == 0 {
				t.Fatal("order 5 has no items: pick another seed")
			}
			if j := runJob(t, dir, 0, "run", job, "--resource", "order_items", "--restart", "--max-pages", "1"); j.resource(t, "order_items").Status != "partial" {
				t.Fatalf("%s: order_items after --max-pages 1: %+v", mode, j.Resources)
			}
			s.DeleteParent(5)
			if j := runJob(t, dir, 0, "run", job, "--resource", "orders"); j.resource(t, "orders").Deleted != 0 {
				t.Fatalf("%s: orders removed order 5 at the first pass to miss it: %+v", mode, j.Resources)
			}
			if j := runJob(t, dir, 0, "run", job, "--resource", "orders"); j.resource(t, "orders").Deleted != 1 {
				t.Fatalf("%s: orders did not remove order 5: %+v", mode, j.Resources)
			}
			r := idemsync(t, dir, nil, "run", job, "--resource", "order_items", "--json")
			if r.code != 0 {
				t.Fatalf("%s: order_items after order 5 was removed: exit %d\n%s%s", mode, r.code, r.stdout, r.stderr)
			}
			if st := parseJobRun(t, r).resource(t, "order_items"); st.Status != "completed" || st.Skipped != 0 {
				t.Errorf("%s: order_items %+v, want completed with no dead letter", mode, st)
			}
			runJob(t, dir, 0, "run", job, "--resource", "order_items") // the second pass to miss order 5's items
			if d := diffTables(tgt.read(t, dir, "order_items", 2, itemsCols...), wantOrderItems(s.AllChildren())); d != "" {
				t.Errorf("%s: order_items differ from the source: %s", mode, d)
			}
		}
	})
}

// A 404 for a parent still in the parent table fails the child (exit 1)
// with a hint naming the ways out.
func TestFanoutParent404Hint(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 6, MaxChildren: 3, Seed: 17})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: "sqlite:out.db"}.yaml())
	s.SetNotFound(3, true)
	r := idemsync(t, dir, nil, "run", job)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"parent orders id=3", "hint:", "on_bad_record: skip", "--restart"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("no %q in the output:\n%s%s", want, r.stdout, r.stderr)
		}
	}
}
