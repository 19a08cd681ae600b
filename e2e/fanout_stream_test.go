package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// stateSize is the size of the state file in dir with its write-ahead log.
func stateSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	for _, f := range []string{"state.db", "state.db-wal"} {
		if st, err := os.Stat(filepath.Join(dir, ".idemsync", f)); err == nil {
			n += st.Size()
		}
	}
	return n
}

// A child run reads its parents from the parent table as it walks them
// (docs/job-file.md, "Parent → child fan-out"): the state file does
// not grow by a copy of the parent table per child run, and a parent
// removed from the parent table before the walk reaches it is not walked.
func TestFanoutParentsStreamed(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tgt shopTarget) {
		const parents = 5000
		s, url := startShop(t, fakeapi.ShopOptions{Parents: parents, MaxChildren: 2, Seed: 7})
		dir := t.TempDir()
		spec := shopJob{api: url, target: tgt.url, schema: tgt.schema, parentRows: "all", parentSize: 500, childSize: 4}
		job := writeJob(t, dir, "job.yaml", spec.yaml())
		runJob(t, dir, 0, "run", job, "--resource", "orders")

		before := stateSize(t, dir)
		for range 4 {
			runJob(t, dir, 0, "run", job, "--resource", "order_items", "--restart", "--max-pages", "1")
		}
		// A copy of 5,000 parent rows is over 150 KiB; four runs, their
		// pages and checkpoints are a few KiB.
		if pgState() {
			t.Log("IDEMSYNC_TEST_STATE=postgres: the state file's growth is not measured")
		} else if grew := stateSize(t, dir) - before; grew > 64<<10 {
			t.Errorf("the state file grew %d KiB over 4 child runs of one page each", grew>>10)
		}

		// Orders 10..20 leave the parent table while the child's run is
		// unfinished (at order 1 or 2): the run does not walk them.
		tgt.exec(t, dir, "DELETE FROM "+spec.table("orders")+" WHERE id BETWEEN 10 AND 20")
		s.ResetCounters()
		runJob(t, dir, 0, "run", job, "--resource", "order_items", "--max-pages", "40")
		for id := 10; id <= 20; id++ {
			if n := s.ChildRequests(id); n != 0 {
				t.Errorf("the children of order %d, gone from the parent table, were asked %d times", id, n)
			}
		}
		if s.ChildRequests(21) == 0 {
			t.Errorf("the walk did not reach order 21: %v", childRequestCounts(s))
		}
	})
}
