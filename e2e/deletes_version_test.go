package e2e

import (
	"strings"
	"testing"
)

// A soft-deleted row whose record comes back with a lower or a null
// target.version is unmarked: seeing a key clears its mark whatever the
// version guard decides about the content (docs/deletions.md). Before,
// the guard refused the whole write and the row stayed marked for good,
// on every later run and under run --verify.
func TestDeletesSoftMarkClearedWhateverTheVersion(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 20)
			rev := func(n int) *int { return &n }
			api.mu.Lock()
			for id, r := range api.recs {
				r.Rev = rev(10)
				api.recs[id] = r
			}
			api.mu.Unlock()
			spec := delJob(api.URL, tg, "soft", "  version: rev\n", "state: "+tg.name+".db\n")
			spec = strings.Replace(spec, "    v: v\n", "    v: v\n    rev: {path: rev, type: integer}\n", 1)
			job := writeJob(t, dir, tg.name+".yaml", spec)
			delRun(t, dir, 0, "run", job)

			gone := api.remove(3, 4, 5)
			delPending(t, dir, 3, "run", job)
			if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 3 {
				t.Fatalf("the sweep marked %d rows, want 3: %s", deletedOf(t, r), r.stdout)
			}
			// 3 comes back with a lower version, 4 with none (null).
			gone[0].Rev, gone[1].Rev = rev(9), nil
			api.restore(gone[0], gone[1])
			delRun(t, dir, 0, "run", job)
			sameIDs(t, "after 3 (lower version) and 4 (null version) came back", liveIDs(tg.rows(t)), api.live())
			// And under --verify: 5 comes back with a lower version.
			gone[2].Rev = rev(1)
			api.restore(gone[2])
			delRun(t, dir, 0, "run", job, "--verify")
			sameIDs(t, "after 5 came back under --verify", liveIDs(tg.rows(t)), api.live())
			if len(tg.rows(t)) != 20 {
				t.Fatalf("%d rows, want 20", len(tg.rows(t)))
			}
		})
	}
}
