package cmd

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// pruneAge moves every run of the state file back by days.
func pruneAge(t *testing.T, state string, days int) {
	t.Helper()
	db, err := sql.Open("sqlite", state)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mod := fmt.Sprintf("-%d days", days)
	if _, err := db.Exec(`UPDATE runs SET started_at = strftime('%Y-%m-%dT%H:%M:%S.000000000Z', started_at, ?),
		finished_at = strftime('%Y-%m-%dT%H:%M:%S.000000000Z', finished_at, ?)`, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// prune drops old completed runs but keeps the latest; run prunes at the
// default retention by itself.
func TestPruneCommand(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 60})
	dir := t.TempDir()
	job := writeJob(t, dir, "orders.yaml", pageJob("orders", url))
	state := filepath.Join(dir, "state.db")
	for range 3 {
		if r := execute(t, false, "run", job, "--quiet"); r.code != 0 {
			t.Fatalf("run: %d %s", r.code, r.stderr)
		}
	}
	pruneAge(t, state, 40)
	r := execute(t, false, "prune", job, "--keep", "30d", "--json")
	var out struct {
		Jobs []struct {
			Name  string `json:"name"`
			Runs  int64  `json:"runs_deleted"`
			Pages int64  `json:"pages_deleted"`
			Kept  int64  `json:"runs_kept"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || len(out.Jobs) != 1 {
		t.Fatalf("prune --json: %d %v %s %s", r.code, err, r.stdout, r.stderr)
	}
	if j := out.Jobs[0]; j.Name != "orders" || j.Runs != 2 || j.Pages != 4 || j.Kept != 1 {
		t.Errorf("prune: %+v, want 2 runs and 4 pages deleted, 1 kept", j)
	}
	if st := execute(t, false, "status", job, "--json"); !strings.Contains(st.stdout, `"status":"completed"`) {
		t.Errorf("status after prune: %s", st.stdout)
	}
	// Two more runs, aged: the next run prunes them itself.
	for range 2 {
		execute(t, false, "run", job, "--quiet")
	}
	pruneAge(t, state, 40)
	if r := execute(t, false, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	r = execute(t, false, "status", job, "--runs", "100", "--json")
	if n := strings.Count(r.stdout, `"kind":"run"`); n != 1+2 { // runs list (1) + last_run + last_sync
		t.Errorf("after the automatic prune %d run objects, want only the latest run: %s", n, r.stdout)
	}
}

// The job file's retention: replaces the default for the automatic prune:
// runs 5 days old survive the default 30d but not retention: 2d.
func TestAutoPruneUsesJobRetention(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 60})
	for _, c := range []struct {
		retention string
		want      int // run objects in status --runs 100 --json
	}{
		{"", 4 + 2},      // default 30d: the 3 aged runs and the latest in the runs list, + last_run + last_sync
		{"2d", 1 + 2},    // only the latest run
		{"1d12h", 1 + 2}, // days and hours
	} {
		dir := t.TempDir()
		spec := pageJob("orders", url)
		if c.retention != "" {
			spec = "retention: " + c.retention + "\n" + spec
		}
		job := writeJob(t, dir, "orders.yaml", spec)
		for range 3 {
			if r := execute(t, false, "run", job, "--quiet"); r.code != 0 {
				t.Fatalf("run: %d %s", r.code, r.stderr)
			}
		}
		pruneAge(t, filepath.Join(dir, "state.db"), 5)
		if r := execute(t, false, "run", job, "--quiet"); r.code != 0 {
			t.Fatalf("run: %d %s", r.code, r.stderr)
		}
		r := execute(t, false, "status", job, "--runs", "100", "--json")
		if n := strings.Count(r.stdout, `"kind":"run"`); n != c.want {
			t.Errorf("retention %q: %d run objects after the automatic prune, want %d: %s", c.retention, n, c.want, r.stdout)
		}
	}
}

// prune --keep 0s gives the space of what it deleted back to the file
// system: the state file and its -wal file together end smaller than
// they began, and the output says how much was freed (issue 28: the file
// grew, its -wal file holding the deleted pages).
func TestPruneReclaimsSpace(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 400})
	dir := t.TempDir()
	job := writeJob(t, dir, "orders.yaml", pageJob("orders", url))
	for range 6 {
		if r := execute(t, false, "run", job, "--quiet"); r.code != 0 {
			t.Fatalf("run: %d %s", r.code, r.stderr)
		}
	}
	r := execute(t, false, "prune", job, "--keep", "0s", "--json")
	var out struct {
		Before int64 `json:"bytes_before"`
		After  int64 `json:"bytes_after"`
		Freed  int64 `json:"bytes_freed"`
		Jobs   []struct {
			Runs int64 `json:"runs_deleted"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
		t.Fatalf("prune --json: %d %v %s %s", r.code, err, r.stdout, r.stderr)
	}
	if len(out.Jobs) != 1 || out.Jobs[0].Runs == 0 {
		t.Fatalf("prune deleted nothing: %s", r.stdout)
	}
	if out.After >= out.Before || out.Freed != out.Before-out.After {
		t.Errorf("prune: %d bytes before, %d after, %d freed: want the file smaller and the difference reported", out.Before, out.After, out.Freed)
	}
	var onDisk int64
	for _, p := range []string{"state.db", "state.db-wal"} {
		if st, err := os.Stat(filepath.Join(dir, p)); err == nil {
			onDisk += st.Size()
		}
	}
	if onDisk != out.After {
		t.Errorf("state file and -wal hold %d bytes after prune, it reported %d", onDisk, out.After)
	}
	// The text form says what it freed.
	execute(t, false, "run", job, "--quiet")
	execute(t, false, "run", job, "--quiet")
	r = execute(t, false, "prune", job, "--keep", "0s")
	if !strings.Contains(r.stdout, "freed") {
		t.Errorf("prune does not say what it freed:\n%s", r.stdout)
	}
}
