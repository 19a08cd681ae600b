package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Every style of the core: a clean run makes the table equal to the source,
// and a second run finds everything unchanged.
func TestCleanRunEqualsSource(t *testing.T) {
	for _, style := range []string{"page", "page-total", "cursor", "cursor-url", "hwm", "none"} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: 260, Seed: 7})
			dir := t.TempDir()
			db := filepath.Join(dir, "out.db")
			job := writeJob(t, dir, "job.yaml", styleJob(style, url, "sqlite:out.db"))

			first := idemsync(t, dir, nil, "run", job, "--json")
			if first.code != 0 {
				t.Fatalf("first run exit %d: %s %s", first.code, first.stdout, first.stderr)
			}
			r := parseRun(t, first)
			if r.Status != "completed" || r.Inserted != 260 || r.Updated != 0 || r.Records < 260 {
				t.Errorf("first run: %+v", r)
			}
			assertEqualSource(t, readSQLite(t, db), sourceRows(api))

			// hwm re-reads only from its saved mark; the others re-read everything.
			second := parseRun(t, idemsync(t, dir, nil, "run", job, "--json"))
			wantRecords := second.Records >= 260
			if style == "hwm" {
				wantRecords = second.Records == 1
			}
			if second.Status != "completed" || second.Inserted != 0 || second.Updated != 0 || second.Unchanged != second.Records || !wantRecords {
				t.Errorf("second run should change nothing: %+v", second)
			}
			if second.RunID == r.RunID {
				t.Errorf("second run reused run id %d", r.RunID)
			}

			// A changed record is an update, nothing else.
			api.Update(17, func(rec *fakeapi.Record) { rec.Name = "Renamed" })
			third := parseRun(t, idemsync(t, dir, nil, "run", job, "--json"))
			if third.Updated != 1 || third.Inserted != 0 {
				t.Errorf("after one change: %+v", third)
			}
			assertEqualSource(t, readSQLite(t, db), sourceRows(api))
		})
	}
}

// Several runs of one job at once: exactly one proceeds, the others skip
// at once (exit 0, status skipped naming the holder: --if-running skip, the
// default) and change nothing.
func TestOverlappingRuns(t *testing.T) {
	// A state file keeps v2's contract: an overlapping plain run exits 4
	// at once. --if-running skip exits 0 with "skipped" and the holder
	// (docs/operations.md, "A second host").
	for _, mode := range []string{"", "skip"} {
		t.Run("if-running="+mode, func(t *testing.T) {
			t.Parallel()
			overlap(t, mode)
		})
	}
}

func overlap(t *testing.T, mode string) {
	// 9 requests of 250 ms: the winner's run outlasts the start of the
	// other four processes even on a loaded machine (at 20 ms a late
	// starter found the run over and ran again).
	api, url := startAPI(t, fakeapi.Options{Records: 200, Latency: 250 * time.Millisecond})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	args := []string{"run", job, "--json"}
	if mode != "" {
		args = append(args, "--if-running", mode)
	}
	const n = 5
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = idemsync(t, dir, nil, args...)
		}()
	}
	wg.Wait()
	ok, locked := 0, 0
	for _, r := range results {
		switch {
		case r.code == 0:
			var sk skipJSON
			if err := json.Unmarshal([]byte(r.stdout), &sk); err != nil {
				t.Fatalf("stdout is not one JSON object: %v: %s", err, r.stdout)
			}
			if sk.Status != "skipped" {
				ok++
				continue
			}
			if mode != "skip" {
				t.Errorf("a plain run on a state file was skipped (exit 0), want exit 4: %s", r.stdout)
			}
			locked++
			if sk.Job != "orders-page" || !strings.Contains(sk.Holder, "pid ") {
				t.Errorf("a skipped run does not name the job and its holder: %s", r.stdout)
			}
		case r.code == 4 && mode == "":
			locked++
			if !strings.Contains(r.stdout+r.stderr, "locked") {
				t.Errorf("exit 4 without naming the lock: %s %s", r.stdout, r.stderr)
			}
		default:
			t.Errorf("unexpected exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	}
	if ok != 1 || locked != n-1 {
		t.Fatalf("%d runs succeeded and %d locked out, want 1 and %d", ok, locked, n-1)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	// 200 records in pages of 25 plus the empty last page: the locked-out runs sent nothing.
	if got := api.TotalRequests(); got != 9 {
		t.Errorf("%d requests, want 9 (only the winner fetches)", got)
	}
}

// Bad job files exit 2, name the culprit, and make no request.
func TestBadSpecs(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 10})
	good := styleJob("page", url, "sqlite:out.db")
	tests := []struct {
		name string
		spec string
		env  []string
		want []string
	}{
		{"unknown key", strings.Replace(good, "  timeout: 5s", "  timeout: 5s\n  tiemout: 5s", 1), nil, []string{"line 6", "unknown key source.tiemout"}},
		{"missing name", strings.Replace(good, "name: orders-page\n", "", 1), nil, []string{"name: is required"}},
		{"missing key", strings.Replace(good, "  key: [id]\n", "", 1), nil, []string{"target.key: is required"}},
		{"missing url", strings.Replace(good, "  url: "+url+"/page\n", "", 1), nil, []string{"source.url: is required"}},
		{"bad style", strings.Replace(good, "style: page", "style: pagination", 1), nil, []string{"line 7", "pagination.style", "pagination"}},
		{"bad duration", strings.Replace(good, "timeout: 5s", "timeout: five", 1), nil, []string{"line 5", "invalid duration", "five"}},
		{"missing env var", strings.Replace(good, "  timeout: 5s", "  headers: {Authorization: \"Bearer ${IDEMSYNC_E2E_TOKEN}\"}\n  timeout: 5s", 1), nil, []string{"line 5", "source.headers.Authorization", "IDEMSYNC_E2E_TOKEN is not set"}},
		{"invalid yaml", good + "  bad: [unclosed\n", nil, []string{"line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", tt.spec)
			for _, args := range [][]string{{"run", job}, {"validate", job}, {"run", job, "--json"}} {
				r := idemsync(t, dir, tt.env, args...)
				if r.code != 2 {
					t.Fatalf("%v: exit %d, want 2\n%s%s", args, r.code, r.stdout, r.stderr)
				}
				if args[len(args)-1] == "--json" {
					if j := parseRun(t, r); j.Status != "failed" || j.Error == "" {
						t.Errorf("--json of an invalid spec: %+v", j)
					}
				}
				msg := r.stderr + r.stdout
				for _, w := range tt.want {
					if !strings.Contains(msg, w) {
						t.Errorf("%v: message does not name %q:\n%s", args, w, msg)
					}
				}
			}
			if n := api.TotalRequests(); n != 0 {
				t.Errorf("%d requests made for an invalid spec", n)
			}
		})
	}
	r := idemsync(t, t.TempDir(), nil, "run")
	if r.code != 2 {
		t.Errorf("run without a job file: exit %d, want 2", r.code)
	}
	if r := idemsync(t, t.TempDir(), nil, "frobnicate"); r.code != 2 {
		t.Errorf("unknown command: exit %d, want 2", r.code)
	}
	if r := idemsync(t, t.TempDir(), nil, "run", "x.yaml", "--no-such-flag"); r.code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", r.code)
	}
}

// Many records sharing one updated_at across page boundaries are neither
// lost nor looped on by the hwm style.
func TestHWMEqualMarksAcrossPages(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 300, SameTimestampEvery: 20})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("hwm", url, "sqlite:out.db"))
	r := idemsync(t, dir, nil, "run", job, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	out := parseRun(t, r)
	last := api.Records()[299].UpdatedAt.UTC().Format(time.RFC3339Nano)
	if out.HWM != last {
		t.Errorf("saved mark %q, want the last updated_at %q", out.HWM, last)
	}
	// More records sharing one mark than fit in a page is an error, not a loop.
	api2, url2 := startAPI(t, fakeapi.Options{Records: 100, SameTimestampEvery: 60})
	dir2 := t.TempDir()
	job2 := writeJob(t, dir2, "job.yaml", styleJob("hwm", url2, "sqlite:out.db"))
	r2 := idemsync(t, dir2, nil, "run", job2)
	if r2.code != 1 || !strings.Contains(r2.stderr, "raise pagination.size") {
		t.Errorf("full page without progress: exit %d: %s", r2.code, r2.stderr)
	}
	if n := api2.TotalRequests(); n > 10 {
		t.Errorf("%d requests: looped", n)
	}
}

// resume with nothing to resume exits 5; --max-pages leaves a partial run
// that the next run continues; status reports it.
func TestPartialRunsResumeAndStatus(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 200})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))

	if r := idemsync(t, dir, nil, "resume", job); r.code != 5 {
		t.Fatalf("resume with nothing to resume: exit %d: %s", r.code, r.stderr)
	}
	st := idemsync(t, dir, nil, "status", job, "--json")
	if st.code != 0 || !strings.Contains(st.stdout, `"status":"never_run"`) {
		t.Errorf("status of a new job: %d %s %s", st.code, st.stdout, st.stderr)
	}

	p := parseRun(t, idemsync(t, dir, nil, "run", job, "--json", "--max-pages", "3"))
	if p.Status != "partial" || p.Pages != 3 || p.Inserted != 75 || p.Checkpoint != "page 4" {
		t.Errorf("partial run: %+v", p)
	}
	st = idemsync(t, dir, nil, "status", job, "--json")
	if !strings.Contains(st.stdout, `"status":"partial"`) || !strings.Contains(st.stdout, `"checkpoint":"page 4"`) {
		t.Errorf("status after a partial run: %s", st.stdout)
	}
	api.ResetCounters()
	c := parseRun(t, idemsync(t, dir, nil, "resume", job, "--json"))
	if c.Status != "completed" || c.RunID != p.RunID || c.Inserted != 200 {
		t.Errorf("resumed run: %+v (partial was %+v)", c, p)
	}
	if got := api.Requests("/page"); got != 6 {
		t.Errorf("resume sent %d requests, want 6 (pages 4-8 and the empty 9th)", got)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))

	// status without a job file lists every job in the state file.
	all := idemsync(t, dir, []string{"IDEMSYNC_STATE=" + filepath.Join(dir, ".idemsync", "state.db")}, "status", "--json")
	if all.code != 0 || !strings.Contains(all.stdout, `"name":"orders-page"`) || !strings.Contains(all.stdout, `"status":"completed"`) {
		t.Errorf("status of all jobs: %s %s", all.stdout, all.stderr)
	}
	text := idemsync(t, dir, nil, "status", job)
	for _, w := range []string{"orders-page", "completed", "dead letters"} {
		if !strings.Contains(text.stdout, w) {
			t.Errorf("status table lacks %q:\n%s", w, text.stdout)
		}
	}
}
