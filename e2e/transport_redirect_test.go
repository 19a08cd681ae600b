package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A same-origin redirect that loses the request's position (a 302 from
// ?page=3 to the list without its page parameter, which the API answers
// with page 1) is no answer for page 3: exit 1 naming the redirect, page 3
// not committed, and the next run, once the API is sane, completes equal
// to the source (docs/fault-tolerance.md, "Hostile input").
func TestRedirectDroppingPositionIsRefused(t *testing.T) {
	front := ftStartFront(t, fakeapi.Options{Records: 210, Seed: 7})
	front.arm(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("page") != "3" {
			return false
		}
		w.Header().Set("Location", "/page?per_page=25")
		w.WriteHeader(http.StatusFound)
		return true
	})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", front.URL, "sqlite:out.db"))
	r := idemsync(t, dir, nil, "run", job)
	if r.code != 1 || !strings.Contains(r.stderr, "redirect") || !strings.Contains(r.stderr, "page") {
		got := readSQLite(t, filepath.Join(dir, "out.db"))
		t.Fatalf("exit %d, want 1 naming the redirect that lost the page parameter (%d of %d source records lost): %s",
			r.code, ftLost(got, sourceRows(front.api)), len(sourceRows(front.api)), r.stderr)
	}
	if st := ftStatus(t, dir, job); st.Checkpoint != "page 3" || st.Status != "failed" {
		t.Errorf("status: %+v, want failed at page 3", st)
	}
	front.arm(nil)
	if r := idemsync(t, dir, nil, "run", job); r.code != 0 {
		t.Fatalf("after the API recovered: exit %d: %s", r.code, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(front.api))
}
