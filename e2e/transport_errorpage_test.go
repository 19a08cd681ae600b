package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// {"data": [], "error": {...}} in the middle of a cursor walk (a GET job,
// no error_path) is an error answer, not the empty last page its missing
// cursor would make it: retried, exit 3 naming the error, nothing swept
// (deletes: hard), the checkpoint at that page; the next run, once the
// API is sane, completes equal to the source (docs/job-file.md, "Error
// payloads in a 2xx body").
func TestEmptyPageWithErrorEndsNoCursorWalk(t *testing.T) {
	front := ftStartFront(t, fakeapi.Options{Records: 210, Seed: 9})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", strings.Replace(styleJob("cursor", front.URL, "sqlite:out.db"), "  key: [id]\n", "  key: [id]\n  deletes: hard\n", 1))
	if r := idemsync(t, dir, nil, "run", job); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	front.arm(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("cursor") != "aWQ6NTA" { // the third page, as the API serves it
			return false
		}
		ftReply(200, "application/json", `{"data":[],"error":{"message":"backend unavailable"}}`)(w)
		return true
	})
	r := idemsync(t, dir, nil, "run", job, "--json")
	if rows := len(readSQLite(t, filepath.Join(dir, "out.db"))); r.code != 3 || !strings.Contains(r.stderr, "backend unavailable") || rows != 210 {
		t.Fatalf("exit %d with %d rows of 210, want 3 naming the error and every row kept: %s\n%s", r.code, rows, r.stdout, r.stderr)
	}
	front.arm(nil)
	if r := idemsync(t, dir, nil, "run", job); r.code != 0 {
		t.Fatalf("after the API recovered: exit %d: %s", r.code, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(front.api))
}
