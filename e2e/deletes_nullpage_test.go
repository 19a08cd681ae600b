package e2e

import (
	"strings"
	"testing"
)

// {"data": null, "error": {...}} mid-walk is an error answer, not an
// empty last page: the run is retried and exits 3 naming the error, and
// the sweep deletes nothing (docs/job-file.md, "Error payloads in a 2xx body").
// Before, the null page ended the walk, exit 0, and deletes: hard removed
// every row after it. No error_path is set: a GET gets no default.
func TestDeletesNullPageWithErrorNeverSweeps(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range delTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api := newDelAPI(t, 45)
			job := writeJob(t, dir, tg.name+".yaml", delJob(api.URL, tg, "hard", "", "state: "+tg.name+".db\n"))
			delRun(t, dir, 0, "run", job)
			api.setNull(5)
			r := delRun(t, dir, 3, "run", job)
			if deletedOf(t, r) != 0 || !strings.Contains(r.stderr, "records path data is null next to an error payload at error") || !strings.Contains(r.stderr, "backend unavailable") {
				t.Errorf("a null page next to an error: %s\n%s", r.stdout, r.stderr)
			}
			if n := len(tg.rows(t)); n != 45 {
				t.Fatalf("%d rows after the null page, want all 45", n)
			}
			api.setNull(0)
			if r := delRun(t, dir, 0, "run", job); deletedOf(t, r) != 0 {
				t.Errorf("the API recovered: %s", r.stdout)
			}
			sameIDs(t, "after the API recovered", liveIDs(tg.rows(t)), api.live())
		})
	}
}
