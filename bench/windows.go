package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// windowsAPI serves records spread evenly over days before now, filtered
// by since (inclusive) and until (exclusive) and paged by an id cursor
// (size records a page, next only while more remain), latency a request.
func windowsAPI(records, size, days int, latency time.Duration) (*httptest.Server, time.Time) {
	now := time.Now().UTC().Truncate(time.Second)
	start := now.AddDate(0, 0, -days)
	span := now.Sub(start)
	marks := make([]time.Time, records+1)
	for i := 1; i <= records; i++ {
		marks[i] = start.Add(span / time.Duration(records) * time.Duration(i-1)) // span*i overflows at 20,000 records
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(latency)
		q := r.URL.Query()
		since, err1 := time.Parse(time.RFC3339, q.Get("since"))
		until, err2 := time.Parse(time.RFC3339, q.Get("until"))
		if err1 != nil || err2 != nil {
			http.Error(w, `{"error":"since and until are required"}`, http.StatusBadRequest)
			return
		}
		// Records are in mark order by id: the window is an id range.
		lo := sort.Search(records, func(i int) bool { return !marks[i+1].Before(since) }) + 1
		hi := sort.Search(records, func(i int) bool { return !marks[i+1].Before(until) }) + 1 // first id not in the window
		if c := q.Get("cursor"); c != "" {
			after, _ := strconv.Atoi(c)
			lo = max(lo, after+1)
		}
		end := min(lo+size, hi)
		data := make([]map[string]any, 0, size)
		for id := lo; id < end; id++ {
			data = append(data, map[string]any{"id": id, "status": "open", "updated_at": marks[id].Format(time.RFC3339)})
		}
		out := map[string]any{"data": data}
		if end < hi {
			out["next_cursor"] = strconv.Itoa(end - 1)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	return srv, start
}

// windows measures a cursor walk split into daily windows, walked one at
// a time and eight at once.
func (b *bench) windows(pages, size, days int, latency time.Duration) error {
	records := pages * size
	fmt.Printf("\n## windows: cursor style, %d pages of %d records over %d days, %s per request, step 1d\n", pages, size, days, latency)
	srv, start := windowsAPI(records, size, days, latency)
	defer srv.Close()
	var rows []row
	walls := map[int]time.Duration{}
	for _, c := range []int{1, 8} {
		job := fmt.Sprintf(`name: bench
source: {url: "%s/tickets", records: data}
pagination: {style: cursor, next: next_cursor}
incremental:
  field: updated_at
  param: since
  end_param: until
  initial: "%s"
  step: 1d
  concurrency: %d
target:
  url: "sqlite:%s"
  table: tickets
  key: [id]
`, srv.URL, start.Format(time.RFC3339), c, filepath.Join(b.dir, fmt.Sprintf("win-c%d.db", c)))
		m, err := b.idemsync(fmt.Sprintf("win-c%d", c), job)
		if err != nil {
			return err
		}
		if m.written != int64(records) {
			return fmt.Errorf("windows, %d at once: %d rows written, want %d", c, m.written, records)
		}
		walls[c] = m.wall
		rows = append(rows, row{fmt.Sprintf("%d window(s) at once (%d pages)", c, m.pages), m.wall, m.cpu, m.rss, m.written})
	}
	b.table(records, rows)
	fmt.Printf("ratio: 8 windows at once is %.1fx faster than 1 (goal >= 6x)\n", walls[1].Seconds()/walls[8].Seconds())
	return nil
}
