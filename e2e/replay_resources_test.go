package e2e

import (
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A `run` of a file with several resources that continues a killed replay
// of one of them has still to sync that resource: the replay covered its
// range only, so the job's exit 0 with "completed" (every resource
// completed a run of kind run in the cycle) needs a run of kind run too.
// Orders added past the replay's range after the kill are in the tables
// when the run says completed.
func TestResourcesRunAfterKilledReplaySyncsTheResource(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 30, MaxChildren: 3, Seed: 23})
	tgt, dir := sqliteTarget(), t.TempDir()
	job := writeJob(t, dir, "job.yaml", shopJob{api: url, target: tgt.url}.yaml())
	runJob(t, dir, 0, "run", job)

	k := idemsync(t, dir, []string{"IDEMSYNC_TEST_FAILPOINT=checkpoint-committed:1"}, "replay", job, "--resource", "orders", "--from", "1", "--to", "2")
	if k.code != -1 && k.code != 137 {
		t.Fatalf("replay with failpoint: exit %d, want killed: %s", k.code, k.stderr)
	}
	outliveKilledLease()
	if st := statusEntries(t, dir, job)["orders"]; st.Status != "interrupted" {
		t.Fatalf("orders after the killed replay: %+v", st)
	}
	s.AddParents(4, 2) // orders 31-34, on pages 5 and 6, past the replay's range

	j := runJob(t, dir, 0, "run", job)
	if j.Status != "completed" {
		t.Fatalf("run after the killed replay: %+v", j)
	}
	assertShop(t, tgt, dir, s, false)
}
