package e2e

import (
	"path/filepath"
	"testing"
)

// A sweep raises no progress marker (docs/guarantees.md, "Progress
// markers"): a target backed up between a full pass's last page and its
// sweep, then restored, has the swept row back and is not taken for
// restored. The next full pass removes (or marks) it at once, since the
// swept pass missed it too: no row stays past a full pass's exit 0. The
// pages of the swept pass write nothing, so the backup taken before that
// pass is the target as its sweep found it.
func TestSweepUndoneByRestore(t *testing.T) {
	for _, mode := range []string{"hard", "soft"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			tg := delTargets(t, dir)[0]
			api := newDelAPI(t, 30)
			inc := "incremental:\n  field: updated_at\n  param: updated_since\n  overlap: 1s\n"
			job := writeJob(t, dir, "job.yaml", withTotal(delJob(api.URL, tg, mode, "", "state: state.db\n"+inc)))
			delRun(t, dir, 0, "run", job, "--full")
			api.remove(2)
			delPending(t, dir, 1, "run", job, "--full")
			out, backup := filepath.Join(dir, "out.db"), filepath.Join(dir, "backup.db")
			vacuumInto(t, out, backup)
			if r := delRun(t, dir, 0, "run", job, "--full"); deletedOf(t, r) != 1 {
				t.Fatalf("the second proving pass: %s", r.stdout)
			}
			restoreSQLite(t, backup, out)
			if live := liveIDs(tg.rows(t)); !live[2] {
				t.Fatalf("the backup does not hold the swept row: %v", live)
			}
			delRun(t, dir, 0, "run", job) // incremental: never deletes
			r := delRun(t, dir, 0, "run", job, "--full")
			if d, p := deletedOf(t, r), pendingOf(t, r); d != 1 || p != 0 {
				t.Errorf("the full pass after the restore: deleted %d, pending %d; want 1 and 0\n%s", d, p, r.stdout)
			}
			sameIDs(t, "after the full pass", liveIDs(tg.rows(t)), api.live())
		})
	}
}
