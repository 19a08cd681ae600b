package e2e

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A page whose object holds a key idemsync reads twice
// ({"next_cursor":null,"data":[…],"next_cursor":"aWQ6NzU"}: a gateway that
// writes a default before the API's own value) has two answers: GJSON reads
// the first, encoding/json and JavaScript the last. Read as null, the
// cursor ended the walk with exit 0 and 75 of 210 rows. It fails the run
// with exit 1 naming the key, nothing of that page written; the next run,
// once the API is sane, completes equal to the source (docs/job-file.md,
// "source").
func TestDuplicateKeyInPageIsRefused(t *testing.T) {
	front := ftStartFront(t, fakeapi.Options{Records: 210, Seed: 9})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("cursor", front.URL, "sqlite:out.db"))
	front.arm(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("cursor") != "aWQ6NTA" { // the third page, as the API serves it
			return false
		}
		rec := httptest.NewRecorder()
		front.api.ServeHTTP(rec, r)
		body := bytes.Replace(rec.Body.Bytes(), []byte(`{"data":`), []byte(`{"next_cursor":null,"data":`), 1)
		ftReply(200, "application/json", string(body))(w)
		return true
	})
	r := idemsync(t, dir, nil, "run", job)
	rows := len(readSQLite(t, filepath.Join(dir, "out.db")))
	if r.code != 1 || !strings.Contains(r.stderr, `"next_cursor" twice`) || rows != 50 {
		t.Fatalf("exit %d with %d rows of 210, want 1 naming the key twice and the 50 rows of pages 1 and 2: %s", r.code, rows, r.stderr)
	}
	front.arm(nil)
	if r := idemsync(t, dir, nil, "run", job); r.code != 0 {
		t.Fatalf("after the API recovered: exit %d: %s", r.code, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(front.api))
}
