package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// `run --max-pages 3` three times in a row commits three pages each time,
// leaving one unfinished run (status interrupted, exit 0, "partial") that
// the next invocation continues, fetching nothing past its limit, and the
// third completes it. Nine pages per style.
func TestMaxPagesThreeTimes(t *testing.T) {
	tests := []struct {
		style, path string
		records     int
		workers     int
	}{
		{"page", "/page", 200, 1},       // 8 full pages and an empty one
		{"offset", "/offset", 200, 4},   // the same, four requests in flight
		{"cursor", "/cursor", 225, 1},   // 9 full pages, no next cursor on the last
		{"link", "/link", 225, 1},       // 9 full pages, no next link on the last
		{"hwm", "/hwm", 200, 1},         // each page re-reads the record at its mark; page 9 is short
		{"page-total", "/page", 225, 1}, // page 9 of total_pages 9
		{"cursor-header", "/cursor-header", 225, 1},
	}
	for _, tt := range tests {
		t.Run(tt.style, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: tt.records})
			dir := t.TempDir()
			spec := styleJob(tt.style, url, "sqlite:out.db")
			if tt.workers > 1 {
				spec = strings.Replace(spec, "  timeout: 5s\n", fmt.Sprintf("  timeout: 5s\n  concurrency: %d\n", tt.workers), 1)
			}
			job := writeJob(t, dir, "job.yaml", spec)
			var runID int64
			for i, want := range []string{"partial", "partial", "completed"} {
				api.ResetCounters()
				r := runCode(t, dir, nil, 0, "run", job, "--max-pages", "3")
				if i == 0 {
					runID = r.RunID
				}
				if r.Status != want || r.RunID != runID || r.Pages != int64(3*(i+1)) {
					t.Errorf("invocation %d: %+v, want %s with %d pages in run %d", i+1, r, want, 3*(i+1), runID)
				}
				// The short last hwm page is proven the end by one more request
				// (docs/pagination.md); the other styles end on an empty page,
				// no next or total_pages.
				wantReq := 3
				if tt.style == "hwm" && i == 2 {
					wantReq = 4
				}
				if got := api.Requests(tt.path); got != wantReq {
					t.Errorf("invocation %d sent %d requests, want %d", i+1, got, wantReq)
				}
				st := statusOf(t, dir, job)
				wantStatus := map[string]string{"partial": "partial", "completed": "completed"}[want]
				if st.Status != wantStatus || st.Checkpoint != r.Checkpoint || st.LastRun == nil || st.LastRun.Status != want {
					t.Errorf("status after invocation %d: %+v, want %s at %s", i+1, st, wantStatus, r.Checkpoint)
				}
			}
			assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
		})
	}
}

// --max-pages and --time-limit work on resume and replay too, and a partial
// replay is continued by the next run as the replay it is. A time limit
// that has already passed still commits the page in progress, so every
// invocation progresses.
func TestLimitsOnResumeAndReplay(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 200})
	dir := t.TempDir()
	db := filepath.Join(dir, "out.db")
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))

	r := runCode(t, dir, nil, 0, "run", job, "--time-limit", "1ns")
	if r.Status != "partial" || r.Pages != 1 || r.Checkpoint != "page 2" {
		t.Errorf("run --time-limit 1ns: %+v, want partial after 1 page", r)
	}
	r2 := runCode(t, dir, nil, 0, "resume", job, "--time-limit", "1ns")
	if r2.Status != "partial" || r2.RunID != r.RunID || r2.Pages != 2 || r2.Checkpoint != "page 3" {
		t.Errorf("resume --time-limit 1ns: %+v, want the same run partial after 2 pages", r2)
	}
	r3 := runCode(t, dir, nil, 0, "resume", job, "--max-pages", "2")
	if r3.Status != "partial" || r3.RunID != r.RunID || r3.Pages != 4 || r3.Checkpoint != "page 5" {
		t.Errorf("resume --max-pages 2: %+v", r3)
	}
	r4 := runCode(t, dir, nil, 0, "run", job, "--time-limit", "1h")
	if r4.Status != "completed" || r4.RunID != r.RunID || r4.Pages != 9 || r4.Inserted != 200 {
		t.Errorf("run --time-limit 1h: %+v", r4)
	}

	deleteIDs(t, db, idRange(26, 125)...)
	p := runCode(t, dir, nil, 0, "replay", job, "--from", "2", "--to", "5", "--max-pages", "2")
	if p.Kind != "replay" || p.Status != "partial" || p.Pages != 2 || p.Inserted != 50 || p.Checkpoint != "page 4" {
		t.Errorf("replay --max-pages 2: %+v", p)
	}
	p2 := runCode(t, dir, nil, 0, "replay", job, "--from", "2", "--to", "5", "--time-limit", "1ns")
	if p2.Kind != "replay" || p2.RunID != p.RunID || p2.Status != "partial" || p2.Pages != 3 || p2.Checkpoint != "page 5" {
		t.Errorf("the same replay again, --time-limit 1ns: %+v", p2)
	}
	api.ResetCounters()
	c := runCode(t, dir, nil, 0, "run", job)
	if c.Kind != "replay" || c.RunID != p.RunID || c.Status != "completed" || c.Pages != 4 || c.Inserted != 100 {
		t.Errorf("run after a partial replay continues it: %+v", c)
	}
	if got := api.Requests("/page"); got != 1 {
		t.Errorf("continuing the replay sent %d requests, want 1 (page 5)", got)
	}
	if rr := idemsync(t, dir, nil, "resume", job); rr.code != 5 {
		t.Errorf("resume after everything completed: exit %d, want 5", rr.code)
	}
	assertEqualSource(t, readSQLite(t, db), sourceRows(api))
}
