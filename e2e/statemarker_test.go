package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A state moved with state export and import keeps the target's progress
// marker of each job: a target restored from an older backup under the
// imported state is still seen as restored, and the run starts from the
// beginning instead of completing over a hole. A dump written before the
// marker was carried imports as one recording none (docs/guarantees.md,
// "Progress markers"; docs/operations.md, "Moving a job between hosts").
func TestStateMoveKeepsProgressMarker(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 11})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("hwm", url, "sqlite:out.db"))
	out, st := filepath.Join(dir, "out.db"), filepath.Join(dir, "st.db")
	runCode(t, dir, nil, 0, "run", job, "--state", st, "--max-pages", "4")
	backup := filepath.Join(dir, "backup.db")
	vacuumInto(t, out, backup)
	runCode(t, dir, nil, 0, "run", job, "--state", st)
	dump := filepath.Join(dir, "dump.json")
	if r := idemsync(t, dir, nil, "state", "export", "--state", st, "--out", dump); r.code != 0 {
		t.Fatalf("state export: exit %d: %s", r.code, r.stderr)
	}
	moved := filepath.Join(dir, "moved.db")
	if r := idemsync(t, dir, nil, "state", "import", dump, "--state", moved); r.code != 0 {
		t.Fatalf("state import: exit %d: %s", r.code, r.stderr)
	}
	restoreSQLite(t, backup, out)
	r := idemsync(t, dir, nil, "run", job, "--state", moved, "--json")
	if r.code != 0 || !strings.Contains(r.stderr, "restored") {
		t.Errorf("the run over the restored target under the imported state: exit %d, want 0 saying restored\n%s", r.code, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, out), sourceRows(api))

	// A dump without the marker (an earlier version's) still imports.
	var d map[string]any
	if err := json.Unmarshal([]byte(readFile(t, dump)), &d); err != nil {
		t.Fatal(err)
	}
	for _, row := range d["tables"].(map[string]any)["jobs"].([]any) {
		delete(row.(map[string]any), "target_marker")
	}
	old, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	oldDump := filepath.Join(dir, "old.json")
	if err := os.WriteFile(oldDump, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := idemsync(t, dir, nil, "state", "import", oldDump, "--state", filepath.Join(dir, "old.db")); r.code != 0 {
		t.Fatalf("import of a dump without markers: exit %d: %s", r.code, r.stderr)
	}
	runCode(t, dir, nil, 0, "run", job, "--state", filepath.Join(dir, "old.db"))
}

// state export --out naming the state file itself (by its path or by a
// link to it) is refused with exit 2 before anything is written: opening
// the output truncated the state and replaced it with its own dump
// (docs/operations.md, "Moving a job between hosts").
func TestStateExportOverStateFile(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 60, Seed: 12})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	st := filepath.Join(dir, "st.db")
	runCode(t, dir, nil, 0, "run", job, "--state", st, "--max-pages", "1")
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(st, link); err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{st, "st.db", link} {
		r := idemsync(t, dir, nil, "state", "export", "--state", st, "--out", o)
		if r.code != 2 || !strings.Contains(r.stderr, "state file") {
			t.Errorf("state export --out %s over its state: exit %d, want 2 naming the state file\n%s", o, r.code, r.stderr)
		}
	}
	if j := runCode(t, dir, nil, 0, "run", job, "--state", st); j.RunID != 1 || j.Status != "completed" {
		t.Errorf("the run after the refused exports: %+v, want run 1 continued to completed", j)
	}
}

// A file of resources with a fan-out child (orders → order_items) keeps a
// marker per resource: runs without changes and a run after a kill between
// a page's two commits are never taken for a restore (no resource starts
// from the beginning), and a target file put back from an older backup is
// seen as restored and ends equal to the shop (docs/guarantees.md,
// "Progress markers").
func TestProgressMarkersResourcesAndFanout(t *testing.T) {
	s, url := startShop(t, fakeapi.ShopOptions{Parents: 20, MaxChildren: 6, Seed: 13})
	dir := t.TempDir()
	spec := shopJob{api: url, target: "sqlite:out.db", customers: true}
	job := writeJob(t, dir, "job.yaml", spec.yaml())
	spurious := func(what string, r result) {
		t.Helper()
		if r.code != 0 || strings.Contains(r.stderr, "restored") || strings.Contains(r.stderr, "starting from the beginning") {
			t.Fatalf("%s: exit %d, or taken for a restore:\n%s", what, r.code, r.stderr)
		}
	}
	spurious("first run", idemsync(t, dir, nil, "run", job, "--json"))
	spurious("run without changes", idemsync(t, dir, nil, "run", job, "--json"))
	backup := filepath.Join(dir, "backup.db")
	vacuumInto(t, filepath.Join(dir, "out.db"), backup)
	s.AddParents(3, 4)
	s.AddChildren(s.Parents()[0].ID, 2)
	if err := runKilled(t, dir, job, "IDEMSYNC_TEST_FAILPOINT=target-committed:3"); err != nil {
		t.Fatal(err)
	}
	spurious("run after the kill", idemsync(t, dir, nil, "run", job, "--json"))
	assertShop(t, sqliteTarget(), dir, s, true)
	restoreSQLite(t, backup, filepath.Join(dir, "out.db"))
	r := idemsync(t, dir, nil, "run", job, "--json")
	if r.code != 0 || !strings.Contains(r.stderr, "restored") {
		t.Fatalf("run over the restored target: exit %d\n%s", r.code, r.stderr)
	}
	assertShop(t, sqliteTarget(), dir, s, true)
}
