package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// SIGKILL at random moments, at least 20 times, across a fan-out whose
// parents have several child pages, then run to exit 0: both tables equal
// the source, and the number of requests proves that each resumed run
// continued at the child page of the parent where the killed one stopped
// (a clean pass plus a few pages a kill), with one parent at a time and
// with fanout_concurrency: 4; into SQLite and PostgreSQL.
func TestFanoutCrashConvergence(t *testing.T) {
	forEachTarget(t, fanoutCrashConvergence)
}

func fanoutCrashConvergence(t *testing.T, tgt shopTarget) {
	const kills = 20
	for _, c := range []struct {
		fanout  int
		latency time.Duration
	}{{1, 3 * time.Millisecond}, {4, 10 * time.Millisecond}} {
		t.Run(fmt.Sprintf("fanout%d", c.fanout), func(t *testing.T) {
			if tgt.schema != "" {
				tgt = postgresTarget(t, tgt.url)
			}
			opts := fakeapi.ShopOptions{Parents: 80, MaxChildren: 11, Seed: 21, Latency: c.latency}
			spec := shopJob{parentSize: 10, childSize: 4, fanout: c.fanout}
			// One clean pass over an identical shop is the yardstick.
			ref, refURL := startShop(t, opts)
			refDir := t.TempDir()
			refSpec := spec
			refSpec.api, refSpec.target = refURL, "sqlite:out.db"
			runJob(t, refDir, 0, "run", writeJob(t, refDir, "job.yaml", refSpec.yaml()))
			fullPass, parentPass := ref.TotalRequests(), ref.Requests("/orders")

			s, url := startShop(t, opts)
			dir := t.TempDir()
			spec.api, spec.target, spec.schema = url, tgt.url, tgt.schema
			job := writeJob(t, dir, "job.yaml", spec.yaml())
			seed := uint64(time.Now().UnixNano())
			st := crashLoop(t, dir, job, kills, seed, 20*time.Millisecond, 150*time.Millisecond)
			assertShop(t, tgt, dir, s, false)

			// A kill wastes at most the child page being committed and one
			// fetched ahead for each parent in flight, plus, with several
			// parents in flight, the pages of the parents finished beyond
			// the contiguous prefix the checkpoint covers (at most
			// fanout-1 parents of at most 4 requests here: 11 children in
			// pages of 4, the short page proven by an empty one). A run that started the child walk over would
			// pay for every page done so far instead. Once a pass has
			// completed, a later one changes no parent: it walks the
			// parents' pages and no child.
			maxChildPages := opts.MaxChildren/spec.childSize + 2
			perKill := 3
			if c.fanout > 1 {
				perKill = (c.fanout-1)*maxChildPages + 2*c.fanout
			}
			runs := statusEntries(t, dir, job, "--runs", "1000")["order_items"].Runs
			completed := 0
			for _, r := range runs {
				if r.Status == "completed" {
					completed++
				}
			}
			if completed < 1 {
				t.Fatalf("order_items has no completed run: %+v", runs)
			}
			bound := fullPass + (completed-1)*parentPass + perKill*st.kills
			got := s.TotalRequests()
			t.Logf("fanout %d (seed %d): %d kills, %d runs completed before their kill, %d final run(s), %d child runs completed, %d requests (bound %d, one clean pass %d, of it %d parent pages)",
				c.fanout, seed, st.kills, st.completions, st.finalRuns, completed, got, bound, fullPass, parentPass)
			if got > bound {
				t.Errorf("%d requests, more than %d: a resumed run started a child walk over", got, bound)
			}
		})
	}
}
