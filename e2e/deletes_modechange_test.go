package e2e

import (
	"testing"
)

// A row a soft sweep marked stays marked only while its record is gone:
// when the job's deletes changes to hard or keep and the record comes back
// unchanged, its row is live again, not left marked (docs/deletions.md,
// "target.deletes").
func TestSoftMarkClearedAfterDeletesChanged(t *testing.T) {
	for _, now := range []string{"hard", "keep"} {
		t.Run(now, func(t *testing.T) {
			dir := t.TempDir()
			for _, tg := range delTargets(t, dir) {
				t.Run(tg.name, func(t *testing.T) {
					api := newDelAPI(t, 10)
					top := "state: " + tg.name + ".db\n"
					job := writeJob(t, dir, tg.name+".yaml", withTotal(delJob(api.URL, tg, "soft", "", top)))
					delRun(t, dir, 0, "run", job)
					gone := api.remove(3)
					delPending(t, dir, 1, "run", job)
					delRun(t, dir, 0, "run", job)
					if m := tg.rows(t)[3]; m == nil {
						t.Fatal("row 3 is not marked after two passes missed it")
					}
					writeJob(t, dir, tg.name+".yaml", withTotal(delJob(api.URL, tg, now, "", top)))
					api.restore(gone...)
					for i := 0; i < 2; i++ {
						r := idemsync(t, dir, nil, "run", job, "--json")
						if m := tg.rows(t)[3]; m != nil {
							t.Fatalf("run %d under deletes: %s (exit %d): row 3 is listed by the API and still marked deleted at %s\n%s", i+1, now, r.code, *m, r.stderr)
						}
					}
				})
			}
		})
	}
}
