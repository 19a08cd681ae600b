package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// With target.version set, a stored row is only overwritten by a record
// whose version is >= the stored one: replaying (or running against) an
// older snapshot of the source leaves the newer rows as they are and
// counts them unchanged; an equal version with new content and a newer
// version both overwrite.
func TestVersionGuard(t *testing.T) {
	opts := fakeapi.Options{Records: 100, Seed: 9}
	oldAPI, oldURL := startAPI(t, opts) // the snapshot before the updates
	cur, curURL := startAPI(t, opts)
	for id := 1; id <= 20; id++ {
		cur.Update(id, func(r *fakeapi.Record) { r.Name = "newer"; r.Total += 100 })
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "out.db")
	spec := strings.Replace(styleJob("page", "${E2E_API}", "sqlite:out.db"), "  key: [id]\n", "  key: [id]\n  version: updated_at\n", 1)
	job := writeJob(t, dir, "job.yaml", spec)
	at := func(url string) []string { return []string{"E2E_API=" + url} }

	first := runCode(t, dir, at(curURL), 0, "run", job)
	if first.Inserted != 100 {
		t.Fatalf("first run: %+v", first)
	}
	assertEqualSource(t, readSQLite(t, db), sourceRows(cur))

	// The old snapshot differs on ids 1-20, all older: nothing is written.
	for _, args := range [][]string{{"replay", job, "--from", "1"}, {"run", job}} {
		r := runCode(t, dir, at(oldURL), 0, args...)
		if r.Records != 100 || r.Unchanged != 100 || r.Updated != 0 || r.Inserted != 0 {
			t.Errorf("%s against the older snapshot: %+v, want all 100 unchanged", args[0], r)
		}
		assertEqualSource(t, readSQLite(t, db), sourceRows(cur))
	}
	if n := oldAPI.Requests("/page"); n != 10 {
		t.Errorf("%d requests to the old snapshot, want 10 (two passes of 5 pages)", n)
	}

	// Same version, other content: >= overwrites.
	same := fakeapi.New(opts)
	for id := 1; id <= 20; id++ {
		rec, _ := cur.Record(id)
		same.Update(id, func(r *fakeapi.Record) {
			*r = rec // cur's version
			if id == 5 {
				r.Name = "same version, new name"
			}
		})
	}
	r := runCode(t, dir, at(serve(t, same)), 0, "run", job)
	if r.Updated != 1 || r.Unchanged != 99 {
		t.Errorf("run with an equal version and new content: %+v, want 1 updated", r)
	}
	assertEqualSource(t, readSQLite(t, db), sourceRows(same))

	// A newer version overwrites.
	cur.Update(7, func(r *fakeapi.Record) { r.Name = "newest" })
	cur.Update(50, func(r *fakeapi.Record) { r.Active = !r.Active })
	r = runCode(t, dir, at(curURL), 0, "run", job)
	if r.Updated != 3 || r.Unchanged != 97 { // 5 goes back to cur's content at the same version
		t.Errorf("run with newer versions: %+v, want 3 updated", r)
	}
	assertEqualSource(t, readSQLite(t, db), sourceRows(cur))
}
