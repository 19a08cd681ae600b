package cmd

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/fakeapi"
	"github.com/idemsync/idemsync/sync/paging"
)

// pinTimes gives every run, page and dead letter of the state file fixed
// times (run N starts at 02:0N:00 and takes 1.25s), so that status output
// can be compared with golden files.
func pinTimes(t *testing.T, state string) {
	t.Helper()
	db, err := sql.Open("sqlite", state)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`UPDATE runs SET started_at = printf('2024-05-01T02:%02d:00.000000000Z', id),
			finished_at = CASE WHEN finished_at IS NULL THEN NULL ELSE printf('2024-05-01T02:%02d:01.250000000Z', id) END`,
		`UPDATE dead_letters SET at = '2024-05-01T02:00:01.000000000Z'`,
		`UPDATE jobs SET full_pass_at = (SELECT max(started_at) FROM runs WHERE runs.job = jobs.name AND full = 1 AND status = 'completed')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// statusFixture runs five jobs into one state file: orders (completed,
// then completed again with nothing new), partial (stopped by --max-pages),
// broken (HTTP 404), skipper (every record dead-lettered) and marks (hwm
// style, with a saved mark); fresh never ran. It returns the folder, the fake API's URL and the job files.
func statusFixture(t *testing.T) (dir, url string, jobs map[string]string) {
	t.Helper()
	_, url = startAPI(t, fakeapi.Options{Records: 120, Seed: 7})
	dir = t.TempDir()
	jobs = map[string]string{
		"orders":  writeJob(t, dir, "orders.yaml", pageJob("orders", url)),
		"partial": writeJob(t, dir, "partial.yaml", pageJob("partial", url)),
		"broken":  writeJob(t, dir, "broken.yaml", strings.Replace(pageJob("broken", url), "/page", "/nope", 1)),
		"skipper": writeJob(t, dir, "skipper.yaml", strings.NewReplacer(
			"total: {path: total, type: numeric}", "tags: {path: tags, type: integer}",
			"  key: [id]\n", "  key: [id]\n  on_bad_record: skip\n",
			"size: 50", "size: 2").Replace(pageJob("skipper", url))),
		"fresh": writeJob(t, dir, "fresh.yaml", pageJob("fresh", url)),
		"marks": writeJob(t, dir, "marks.yaml", `name: marks
state: state.db
source: {url: "`+url+`/hwm", records: data}
pagination: {style: hwm, field: updated_at, param: since, overlap: 1m, size_param: limit, size: 50}
target: {url: "sqlite:out.db", table: marks, key: [id]}
`),
	}
	for _, run := range []struct {
		args []string
		code int
	}{
		{[]string{"run", jobs["orders"]}, 0},
		{[]string{"run", jobs["orders"]}, 0},
		{[]string{"run", jobs["partial"], "--max-pages", "1"}, 0},
		{[]string{"run", jobs["broken"]}, 1},
		{[]string{"run", jobs["skipper"], "--max-pages", "1"}, 0},
		{[]string{"run", jobs["marks"]}, 0},
	} {
		if r := execute(t, false, append(run.args, "--quiet")...); r.code != run.code {
			t.Fatalf("%v: exit %d, want %d: %s", run.args, r.code, run.code, r.stderr)
		}
	}
	pinTimes(t, filepath.Join(dir, "state.db"))
	return dir, url, jobs
}

// normalize replaces what changes between test runs: the API's address and
// the temporary folder.
func normalize(s, dir, url string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, url, "http://API"), dir, "$DIR")
}

func TestStatusGolden(t *testing.T) {
	dir, url, jobs := statusFixture(t)
	state := filepath.Join(dir, "state.db")
	tests := []struct {
		golden string
		args   []string
	}{
		{"status-completed.txt", []string{"status", jobs["orders"]}},
		{"status-completed.json", []string{"status", jobs["orders"], "--json"}},
		{"status-runs.txt", []string{"status", jobs["orders"], "--runs", "5"}},
		{"status-partial.txt", []string{"status", jobs["partial"]}},
		{"status-failed.txt", []string{"status", jobs["broken"], "--runs", "1"}},
		{"status-dead-letters.txt", []string{"status", jobs["skipper"], "--dead-letters"}},
		{"status-never-run.txt", []string{"status", jobs["fresh"]}},
		{"status-hwm.txt", []string{"status", jobs["marks"]}},
		{"status-never-run.json", []string{"status", jobs["fresh"], "--json"}},
		{"status-all.txt", []string{"status", "--state", state}},
		{"status-all.json", []string{"status", "--state", state, "--json"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			r := execute(t, false, tt.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if strings.HasSuffix(tt.golden, ".json") {
				if strings.Count(r.stdout, "\n") != 1 {
					t.Errorf("not one line of JSON: %q", r.stdout)
				}
				// Indented for reading; the command prints one line.
				var b bytes.Buffer
				if err := json.Indent(&b, []byte(r.stdout), "", "  "); err != nil {
					t.Fatalf("not one JSON object: %v\n%s", err, r.stdout)
				}
				r.stdout = b.String()
			}
			golden(t, tt.golden, normalize(r.stdout, dir, url))
		})
	}
}

// The stable keys of docs/operations.md ("status") are in status --json, with
// the same last_run fields as run --json.
func TestStatusJSONContract(t *testing.T) {
	_, _, jobs := statusFixture(t)
	var out struct {
		Jobs []map[string]json.RawMessage `json:"jobs"`
	}
	r := execute(t, false, "status", jobs["orders"], "--json")
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Jobs) != 1 {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	for _, k := range []string{"name", "status", "checkpoint", "hwm", "last_run", "dead_letters"} {
		if _, ok := out.Jobs[0][k]; !ok {
			t.Errorf("status --json lacks %q", k)
		}
	}
	var last map[string]any
	if err := json.Unmarshal(out.Jobs[0]["last_run"], &last); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"job", "run_id", "kind", "status", "pages", "records", "inserted", "updated", "unchanged", "skipped", "checkpoint", "hwm", "duration_ms", "error"} {
		if _, ok := last[k]; !ok {
			t.Errorf("last_run lacks %q", k)
		}
	}
}

// status only reads: a job that never ran, or a state file that does not
// exist, leaves no file behind.
func TestStatusNeverCreatesStateFile(t *testing.T) {
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", strings.Replace(pageJob("orders", "http://127.0.0.1:9"), "state: state.db", "state: sub/state.db", 1))
	for _, args := range [][]string{
		{"status", job},
		{"status", job, "--json"},
		{"status", job, "--runs", "3", "--dead-letters"},
		{"status", "--state", filepath.Join(dir, "sub", "state.db")},
		{"status", "--state", filepath.Join(dir, "sub", "state.db"), "--json"},
	} {
		r := execute(t, false, args...)
		if r.code != 0 {
			t.Errorf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		if strings.Contains(strings.Join(args, " "), job) && !strings.Contains(r.stdout, "never") {
			t.Errorf("%v: a job that never ran does not say so:\n%s", args, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("status created %s: %v", filepath.Join(dir, "sub"), err)
	}
}

func TestStatusUsage(t *testing.T) {
	for _, args := range [][]string{
		{"status", "a.yaml", "b.yaml"},
		{"status", "--runs", "-1"},
		{"status", "--runs", "x"},
	} {
		if p := parseCmd(t, newCmdStatus, args...); p.opts != nil || p.code() != 2 {
			t.Errorf("%v: ran %v, exit %d, want 2", args, p.opts != nil, p.code())
		}
	}
	p := parseCmd(t, newCmdStatus, "status", "a.yaml", "--runs", "5", "--dead-letters", "--state", "s.db", "--json")
	if o := p.opts; p.err != nil || o.runs != 5 || !o.dead || len(o.args) != 1 || o.args[0] != "a.yaml" || o.g.state != "s.db" || !o.g.json {
		t.Errorf("status flags: %v %+v", p.err, p.opts)
	}
	if p := parseCmd(t, newCmdStatus, "status"); p.err != nil || len(p.opts.args) != 0 || p.opts.runs != 0 || p.opts.dead {
		t.Errorf("status without arguments: %v %+v", p.err, p.opts)
	}
}

// While a process holds the job's lock, status says running and names the
// holder; once the lock is gone, a run still recorded as running was killed
// and status says interrupted.
func TestStatusRunningAndKilled(t *testing.T) {
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", pageJob("orders", "http://127.0.0.1:9"))
	ctx := context.Background()
	store, err := openStore(ctx, filepath.Join(dir, "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	unlock, err := store.Lock(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	page4, err := paging.ParsePosition(paging.StylePage, "4")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.StartRun(ctx, &contract.RunInfo{Job: "orders", Kind: contract.KindRun, Checkpoint: page4.Encode()}); err != nil {
		t.Fatal(err)
	}
	r := execute(t, false, "status", job)
	for _, want := range []string{"status        running", "lock holder   pid ", "#1 (id 1) run running", "running for", "checkpoint    page 4"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status of a running job lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := execute(t, false, "status", job, "--json"); !strings.Contains(r.stdout, `"status":"running"`) || !strings.Contains(r.stdout, `"lock_holder":"pid `) {
		t.Errorf("status --json of a running job: %s", r.stdout)
	}
	unlock()
	r = execute(t, false, "status", job, "--json")
	if !strings.Contains(r.stdout, `"name":"orders","status":"interrupted"`) || strings.Contains(r.stdout, "lock_holder") {
		t.Errorf("status --json of a killed run: %s", r.stdout)
	}
}

// status JOB.yaml says when the job file no longer describes the walk of
// the unfinished run (the next run exits 2) or of the last completed one
// (the next run starts from the beginning).
func TestStatusWalkChanged(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 120, Seed: 7})
	dir := t.TempDir()
	job := writeJob(t, dir, "orders.yaml", pageJob("orders", url))
	if r := execute(t, false, "run", job, "--max-pages", "1", "--quiet"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	writeJob(t, dir, "orders.yaml", strings.Replace(pageJob("orders", url), "size: 50", "size: 40", 1))
	r := execute(t, false, "status", job)
	if !strings.Contains(r.stdout, "refused (exit 2)") || !strings.Contains(r.stdout, "pagination.size: 50 → 40") {
		t.Fatalf("status over a changed walk of an unfinished run:\n%s", r.stdout)
	}
	r = execute(t, false, "status", job, "--json")
	if !strings.Contains(r.stdout, `"walk_changes":["pagination.size: 50 → 40"]`) {
		t.Fatalf("status --json over a changed walk: %s", r.stdout)
	}
	if r := execute(t, false, "run", job, "--restart", "--quiet"); r.code != 0 {
		t.Fatalf("run --restart: %d %s", r.code, r.stderr)
	}
	writeJob(t, dir, "orders.yaml", pageJob("orders", url))
	r = execute(t, false, "status", job)
	if !strings.Contains(r.stdout, "starts from the beginning") || !strings.Contains(r.stdout, "pagination.size: 40 → 50") {
		t.Fatalf("status over a changed walk of a completed job:\n%s", r.stdout)
	}
	writeJob(t, dir, "orders.yaml", strings.Replace(pageJob("orders", url), "size: 50", "size: 40", 1))
	if r := execute(t, false, "status", job); strings.Contains(r.stdout, "walk") || strings.Contains(r.stdout, "refused") {
		t.Fatalf("status with the walk unchanged:\n%s", r.stdout)
	}
}
