package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// descAPI is an hwm API that filters by since (updated_at >= since) but
// sorts its records by updated_at descending, as an API does when the job
// forgot its sort parameter: the job says ascending, the API does not.
type descAPI struct{ a *vmAPI }

func (d descAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.a.mu.Lock()
	defer d.a.mu.Unlock()
	q := r.URL.Query()
	since := q.Get("since")
	var out []vmRec
	for _, rec := range d.a.recs {
		ts, _ := time.Parse(time.RFC3339Nano, rec.UpdatedAt)
		s, _ := time.Parse(time.RFC3339Nano, since)
		if since == "" || !ts.Before(s) {
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatedAt > out[j].UpdatedAt })
	limit, _ := strconv.Atoi(q.Get("limit"))
	out = out[:min(limit, len(out))]
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// An hwm API that returns its records newest first: the first page's
// highest mark is the newest record's, the request at it makes no
// progress, and the walk ended with exit 0 and a saved mark above the
// records of every page it never asked for. A page whose marks go down
// breaks the order the style relies on: the run fails and saves no mark
// past what it read.
func TestHWMDescendingRefused(t *testing.T) {
	t.Parallel()
	a := &vmAPI{}
	for id := 1; id <= 12; id++ {
		a.set(id, fmt.Sprintf("r%d", id), fmt.Sprintf("2024-01-01T00:%02d:00Z", id))
	}
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", vmJob(serve(t, descAPI{a}), false))
	r := idemsync(t, dir, nil, "run", job)
	if r.code == 0 {
		got := readNames(t, filepath.Join(dir, "out.db"), "orders")
		hwm := statusOf(t, dir, job).HWM
		for id := 1; id <= 12; id++ {
			if _, ok := got[id]; !ok {
				t.Errorf("exit 0, saved mark %s, but id %d (2024-01-01T00:%02d:00Z) is not in the table", hwm, id, id)
			}
		}
		return
	}
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	if hwm := statusOf(t, dir, job).HWM; hwm != "" {
		t.Errorf("saved mark %q after a page out of order", hwm)
	}
	t.Logf("%s", r.stderr)
}

// dateWindowAPI takes its window as dates (since=2024-01-01 inclusive,
// until=2024-01-02 exclusive: the days from since up to the day before
// until), as incremental.format: date writes them, and serves every record
// of the window on one page.
type dateWindowAPI struct{ recs map[int]string }

func (d dateWindowAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	since, err1 := time.Parse(time.DateOnly, q.Get("since"))
	until, err2 := time.Parse(time.DateOnly, q.Get("until"))
	if err1 != nil || err2 != nil {
		http.Error(w, `{"error":"since and until are dates"}`, http.StatusBadRequest)
		return
	}
	data := []map[string]any{}
	for id, ts := range d.recs {
		tm, _ := time.Parse(time.RFC3339, ts)
		if !tm.Before(since) && tm.Before(until) {
			data = append(data, map[string]any{"id": id, "name": fmt.Sprintf("rec %d", id), "updated_at": ts})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
}

// Windows of 6h written with incremental.format: date: the window's upper
// bound, cut down to its day, made the windows of the run's last day
// (until=<that day>) empty, and the run completed with the mark saved at
// its start, above that day's records. The upper bound a format writes is
// rounded up, like the window never ends before its bound.
func TestWindowsDateFormatUpperBound(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if now.Sub(day) < 10*time.Second {
		time.Sleep(10 * time.Second) // a record of the run's day before it starts
		now = time.Now().UTC()
		day = now.Truncate(24 * time.Hour)
	}
	recs := map[int]string{
		1: day.Add(-30 * time.Hour).Format(time.RFC3339),
		2: day.Add(-1 * time.Second).Format(time.RFC3339),
		3: day.Format(time.RFC3339),
		4: day.Add(now.Sub(day) / 2).Truncate(time.Second).Format(time.RFC3339),
	}
	url := serve(t, dateWindowAPI{recs})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: datewin
source: {url: "%s", records: data}
pagination: {style: none}
incremental: {field: updated_at, param: since, end_param: until, format: date, step: 6h, concurrency: 2, initial: "%s"}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, url, day.Add(-48*time.Hour).Format(time.RFC3339)))
	runCode(t, dir, nil, 0, "run", job)
	hwm := statusOf(t, dir, job).HWM
	got := readItems(t, filepath.Join(dir, "out.db"), "", "")
	for id, ts := range recs {
		if _, ok := got[id]; !ok && ts <= hwm {
			t.Errorf("exit 0 with saved mark %s, but record %d (%s) is not in the table", hwm, id, ts)
		}
	}
}
