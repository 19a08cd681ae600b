package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// windowAPI serves n records updated one an hour back from base, filtered
// by since (inclusive) and until (exclusive) and paged by an id cursor,
// five records a page. It logs the window of every request.
type windowAPI struct {
	url    string
	base   time.Time
	n      int
	reqs   atomic.Int64
	mu     sync.Mutex
	window []string // "since until" of every request
}

func newWindowAPI(t *testing.T, n int, latency time.Duration) *windowAPI {
	t.Helper()
	a := &windowAPI{n: n, base: time.Now().UTC().Truncate(time.Second)}
	a.url = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.reqs.Add(1)
		time.Sleep(latency)
		q := r.URL.Query()
		a.mu.Lock()
		a.window = append(a.window, q.Get("since")+" "+q.Get("until"))
		a.mu.Unlock()
		since, err1 := time.Parse(time.RFC3339, q.Get("since"))
		until, err2 := time.Parse(time.RFC3339, q.Get("until"))
		if err1 != nil || err2 != nil {
			http.Error(w, `{"error":"since and until are required"}`, http.StatusBadRequest)
			return
		}
		after, _ := strconv.Atoi(q.Get("cursor"))
		var data []map[string]any
		for id := 1; id <= a.n && len(data) < 5; id++ {
			ts := a.updated(id)
			if id > after && !ts.Before(since) && ts.Before(until) {
				data = append(data, map[string]any{"id": id, "name": fmt.Sprintf("rec %d", id), "updated_at": ts.Format(time.RFC3339)})
			}
		}
		out := map[string]any{"data": append([]map[string]any{}, data...)}
		if len(data) == 5 {
			out["next"] = strconv.Itoa(data[4]["id"].(int))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	return a
}

// updated is record id's mark: id hours before the API started.
func (a *windowAPI) updated(id int) time.Time { return a.base.Add(-time.Duration(id) * time.Hour) }

func windowJob(url, initial string, concurrency int) string {
	return fmt.Sprintf(`name: windows
source: {url: "%s", records: data}
pagination: {style: cursor, next: next}
incremental: {field: updated_at, param: since, end_param: until, step: 1d, concurrency: %d, initial: "%s"}
retry: {attempts: 3, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url, concurrency, initial)
}

// A run split into daily windows walks them one after another: each
// request sends its window's bounds, consecutive windows meet, the first
// starts at the initial mark and the last ends at the run's start, every
// record lands once, and the saved mark is the run's start.
func TestWindowsWalkInOrder(t *testing.T) {
	api := newWindowAPI(t, 100, 0) // 100 hours: five windows of a day
	initial := api.base.Add(-110 * time.Hour).Format(time.RFC3339)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", windowJob(api.url, initial, 1))
	res := runCode(t, dir, nil, 0, "run", job)
	assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), wantItems(100, func(i int) string { return fmt.Sprintf("rec %d", i) }))
	var bounds [][2]string
	for _, w := range api.window {
		s, u, _ := strings.Cut(w, " ")
		if len(bounds) == 0 || bounds[len(bounds)-1] != [2]string{s, u} {
			bounds = append(bounds, [2]string{s, u})
		}
	}
	if len(bounds) < 5 || bounds[0][0] != initial {
		t.Fatalf("windows %q, want 5 or more starting at %s", bounds, initial)
	}
	for i := 1; i < len(bounds); i++ {
		if bounds[i][0] != bounds[i-1][1] {
			t.Errorf("window %d starts at %s, the previous ended at %s", i+1, bounds[i][0], bounds[i-1][1])
		}
	}
	last, _ := time.Parse(time.RFC3339, bounds[len(bounds)-1][1])
	if last.Before(api.base) || last.After(api.base.Add(5*time.Second)) {
		t.Errorf("the last window ends at %s, want the run's start (about %s)", last, api.base)
	}
	// The last bound is the run's start rounded up; the saved mark the
	// start rounded down, so the last second is read again next time.
	if st := statusOf(t, dir, job); st.HWM == "" || st.HWM > bounds[len(bounds)-1][1] || st.HWM < api.base.Format(time.RFC3339) {
		t.Errorf("saved mark %q, want the run's start rounded down (last bound %q)", st.HWM, bounds[len(bounds)-1][1])
	}
	t.Logf("%d windows, %d pages, %d requests", len(bounds), res.Pages, api.reqs.Load())
}

// SIGKILLs anywhere in a run walking four windows at once converge on the
// source, and each resume continues every window in flight at the page
// where the run was killed
// (the requests stay within one clean run per completed run plus what a
// kill can waste).
func TestWindowsCrashConvergence(t *testing.T) {
	const n, kills = 2400, 20 // 100 daily windows, about 580 requests a pass
	clean := newWindowAPI(t, n, 0)
	initial := clean.base.Add(-2410 * time.Hour).Format(time.RFC3339)
	cdir := t.TempDir()
	runCode(t, cdir, nil, 0, "run", writeJob(t, cdir, "job.yaml", windowJob(clean.url, initial, 1)))
	pass := int(clean.reqs.Load())

	api := newWindowAPI(t, n, 10*time.Millisecond)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", windowJob(api.url, api.base.Add(-2410*time.Hour).Format(time.RFC3339), 4))
	seed := uint64(time.Now().UnixNano())
	st := crashLoop(t, dir, job, kills, seed, 15*time.Millisecond, 60*time.Millisecond)
	assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), wantItems(n, func(i int) string { return fmt.Sprintf("rec %d", i) }))
	completed := completedRuns(t, dir, job)
	// A later run's windows start elsewhere (its mark and start differ):
	// allow one page more per window on top of the clean run's requests.
	bound := completed*(pass+110) + 5*(st.kills+1) // a kill wastes the page in flight of each of the 4 windows
	t.Logf("seed %d: %d kills, %d completed, %d requests (clean run %d, bound %d)", seed, st.kills, completed, api.reqs.Load(), pass, bound)
	if int(api.reqs.Load()) > bound {
		t.Errorf("%d requests, more than %d: a resumed run started its windows over", api.reqs.Load(), bound)
	}
}

// The windows are part of the walk: a run killed mid-way whose step then
// changes stops with exit 2 naming the key.
func TestWindowsStepIsPartOfTheWalk(t *testing.T) {
	api := newWindowAPI(t, 60, 0)
	dir := t.TempDir()
	spec := windowJob(api.url, api.base.Add(-70*time.Hour).Format(time.RFC3339), 2)
	job := writeJob(t, dir, "job.yaml", spec)
	runCode(t, dir, nil, 0, "run", job, "--max-pages", "2")
	writeJob(t, dir, "job.yaml", strings.Replace(spec, "step: 1d", "step: 12h", 1))
	r := idemsync(t, dir, nil, "run", job)
	if r.code != 2 || !strings.Contains(r.stderr, "incremental.step") {
		t.Errorf("exit %d, want 2 naming incremental.step:\n%s", r.code, r.stderr)
	}
}

// replay --from/--to of a windowed job replays the windows of that range
// (marks, not positions), in windows of step, and never moves the saved
// mark.
func TestWindowsReplayRange(t *testing.T) {
	api := newWindowAPI(t, 100, 0)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", windowJob(api.url, api.base.Add(-110*time.Hour).Format(time.RFC3339), 2))
	runCode(t, dir, nil, 0, "run", job)
	mark := statusOf(t, dir, job).HWM
	// Records 30..80 are 30 to 80 hours old: lose them, then replay that range.
	db := openSQLite(t, filepath.Join(dir, "out.db"))
	if _, err := db.Exec(`DELETE FROM items WHERE id BETWEEN 30 AND 80`); err != nil {
		t.Fatal(err)
	}
	from, to := api.base.Add(-81*time.Hour).Format(time.RFC3339), api.base.Add(-29*time.Hour).Format(time.RFC3339)
	api.mu.Lock()
	api.window = nil
	api.mu.Unlock()
	res := runCode(t, dir, nil, 0, "replay", job, "--from", from, "--to", to)
	assertItems(t, readItems(t, filepath.Join(dir, "out.db"), "", ""), wantItems(100, func(i int) string { return fmt.Sprintf("rec %d", i) }))
	for _, w := range api.window {
		s, u, _ := strings.Cut(w, " ")
		if s < from || u > to {
			t.Errorf("replay requested the window %s to %s, outside %s to %s", s, u, from, to)
		}
	}
	if len(api.window) < 3 {
		t.Errorf("replay requests %q, want the 52 hours in daily windows", api.window)
	}
	if got := statusOf(t, dir, job).HWM; got != mark {
		t.Errorf("saved mark %q after the replay, want it unchanged (%q)", got, mark)
	}
	if res.Inserted != 51 {
		t.Errorf("replay inserted %d, want the 51 lost records", res.Inserted)
	}
	r := idemsync(t, dir, nil, "replay", job, "--from", "page 3")
	if r.code != 2 || !strings.Contains(r.stderr, "replays by mark") {
		t.Errorf("replay --from a position: exit %d, want 2 saying windowed jobs replay by mark:\n%s", r.code, r.stderr)
	}
}

// The same windowed walk, four windows at once, into PostgreSQL.
func TestWindowsPostgres(t *testing.T) {
	pgURL := postgresURL(t)
	schema := freshSchema(t, pgURL)
	api := newWindowAPI(t, 100, 2*time.Millisecond)
	dir := t.TempDir()
	spec := strings.Replace(windowJob(api.url, api.base.Add(-110*time.Hour).Format(time.RFC3339), 4),
		`target: {url: "sqlite:out.db", table: items, key: [id]}`, fmt.Sprintf(`target: {url: "%s", table: %s.items, key: [id]}`, pgURL, schema), 1)
	job := writeJob(t, dir, "job.yaml", spec)
	st := crashLoop(t, dir, job, 5, uint64(time.Now().UnixNano()), 10*time.Millisecond, 40*time.Millisecond)
	assertItems(t, readItems(t, "", pgURL, schema), wantItems(100, func(i int) string { return fmt.Sprintf("rec %d", i) }))
	t.Logf("%d kills, %d requests", st.kills, api.reqs.Load())
}
