package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// incrementalYAML makes a styleJob incremental on updated_at.
const incrementalYAML = `incremental:
  field: updated_at
  param: updated_since
  initial: "2024-01-01T00:00:00Z"
  overlap: 1m
`

// startLoggedAPI serves a fake API behind a queryLog.
func startLoggedAPI(t *testing.T, opts fakeapi.Options) (*fakeapi.API, *queryLog, string) {
	t.Helper()
	api := fakeapi.New(opts)
	log := &queryLog{h: api}
	return api, log, serve(t, log)
}

// minus returns an RFC 3339 mark moved back by d.
func minus(t *testing.T, mark string, d time.Duration) string {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, mark)
	if err != nil {
		t.Fatalf("mark %q: %v", mark, err)
	}
	return ts.Add(-d).UTC().Format(time.RFC3339Nano)
}

// An incremental window over a source that changes while it is read:
// records behind and ahead of the run's position are updated (which moves
// them to the end of the updated_at order) and records are added. Every
// request of the run carries the mark fixed when it started; the run
// misses the updates behind it; the saved mark becomes the highest
// updated_at seen, only at the end; one more run, sent that mark minus the
// overlap, converges to the source while reading only the recent records.
func TestIncrementalMutatingSource(t *testing.T) {
	for _, style := range []string{"page", "offset", "cursor", "link"} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			api, log, url := startLoggedAPI(t, fakeapi.Options{Records: 300, Seed: 5})
			dir := t.TempDir()
			db := filepath.Join(dir, "out.db")
			job := writeJob(t, dir, "job.yaml", styleJob(style, url, "sqlite:out.db")+incrementalYAML)
			var mu gosync.Mutex
			k := 0
			api.MutateEvery(2, func(a *fakeapi.API) {
				mu.Lock()
				k++
				n := k
				mu.Unlock()
				a.Update(n, func(r *fakeapi.Record) { r.Name = fmt.Sprintf("behind %d", n) })    // already read
				a.Update(300-n, func(r *fakeapi.Record) { r.Name = fmt.Sprintf("ahead %d", n) }) // not yet read
				a.Add(1)
			})
			first := runCode(t, dir, nil, 0, "run", job)
			api.MutateEvery(0, nil)
			if got := log.values("updated_since"); !slices.Equal(got, []string{"2024-01-01T00:00:00Z"}) {
				t.Errorf("first run sent updated_since %q, want the initial mark on every request", got)
			}
			saved := statusOf(t, dir, job).HWM
			var maxSeen time.Time
			target := readSQLite(t, db)
			for _, r := range target {
				ts, _ := time.Parse(time.RFC3339Nano, r.updated)
				if ts.After(maxSeen) {
					maxSeen = ts
				}
			}
			if first.HWM != saved || saved != maxSeen.UTC().Format(time.RFC3339Nano) {
				t.Errorf("saved mark %q (run reported %q), want the highest updated_at written %s", saved, first.HWM, maxSeen.Format(time.RFC3339Nano))
			}
			if r1, ok := target[1]; !ok || r1.name == "behind 1" {
				t.Fatalf("the first run saw the update of record 1 made behind it; the test proves nothing")
			}

			second := runCode(t, dir, nil, 0, "run", job)
			if got, want := log.values("updated_since"), minus(t, saved, time.Minute); !slices.Equal(got, []string{want}) {
				t.Errorf("second run sent updated_since %q, want the saved mark minus the overlap %q", got, want)
			}
			assertEqualSource(t, readSQLite(t, db), sourceRows(api))
			if second.Records >= int64(len(api.Records())) || second.Updated == 0 {
				t.Errorf("second run: %+v, want only the recently updated records read, some updated", second)
			}
		})
	}
}

// SIGKILLs at random moments while the source changes: every continued run
// keeps its window, the mark moves only at completion, and one more run
// after the changes stop converges.
func TestIncrementalCrashConvergence(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 1500, Latency: 2 * time.Millisecond})
	dir := t.TempDir()
	// Runs continued across kills see many changes: the overlap covers them.
	spec := styleJob("page", url, "sqlite:out.db") + strings.Replace(incrementalYAML, "overlap: 1m", "overlap: 1h", 1)
	job := writeJob(t, dir, "job.yaml", spec)
	var mu gosync.Mutex
	k := 0
	api.MutateEvery(3, func(a *fakeapi.API) {
		mu.Lock()
		k++
		n := k
		mu.Unlock()
		a.Update(1+(n*37)%1500, func(r *fakeapi.Record) { r.Total += 1 })
	})
	seed := uint64(time.Now().UnixNano())
	st := crashLoop(t, dir, job, 10, seed, 15*time.Millisecond, 90*time.Millisecond)
	api.MutateEvery(0, nil)
	runCode(t, dir, nil, 0, "run", job)
	t.Logf("seed %d: %d kills, %d completions, %d mutations", seed, st.kills, st.completions, k)
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}

// The window is fixed when a run starts: a partial run does not save a
// mark, and resuming it — after the source changed — sends the same mark.
func TestIncrementalWindowKeptOnResume(t *testing.T) {
	api, log, url := startLoggedAPI(t, fakeapi.Options{Records: 200})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("cursor", url, "sqlite:out.db")+incrementalYAML)
	runCode(t, dir, nil, 0, "run", job)
	saved := statusOf(t, dir, job).HWM
	log.values("updated_since")
	for id := 1; id <= 60; id++ {
		api.Update(id, func(r *fakeapi.Record) { r.Active = !r.Active })
	}
	p := runCode(t, dir, nil, 0, "run", job, "--max-pages", "1")
	if p.Status != "partial" || p.HWM != saved {
		t.Errorf("partial run: %+v, want the saved mark %q unchanged", p, saved)
	}
	if st := statusOf(t, dir, job); st.HWM != saved {
		t.Errorf("a partial run saved mark %q, want %q until the run completes", st.HWM, saved)
	}
	api.Update(150, func(r *fakeapi.Record) { r.Name = "late" })
	c := runCode(t, dir, nil, 0, "resume", job)
	want := minus(t, saved, time.Minute)
	if got := log.values("updated_since"); !slices.Equal(got, []string{want}) {
		t.Errorf("partial run and resume sent updated_since %q, want only %q", got, want)
	}
	if c.RunID != p.RunID || c.Status != "completed" || c.Updated != 61 {
		t.Errorf("resumed run: %+v, want 61 updates", c)
	}
	if st := statusOf(t, dir, job); st.HWM != fakeMark(200+61) {
		t.Errorf("saved mark after completion %q, want %q", st.HWM, fakeMark(200+61))
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}

// Records sharing the boundary timestamp are not lost: with no overlap the
// next run asks for updated_at >= the saved mark itself, so a record that
// arrives later with exactly that timestamp is read.
func TestIncrementalBoundaryTimestamp(t *testing.T) {
	api, log, url := startLoggedAPI(t, fakeapi.Options{Records: 100, SameTimestampEvery: 10})
	dir := t.TempDir()
	spec := styleJob("page", url, "sqlite:out.db") + `incremental:
  field: updated_at
  param: updated_since
  initial: "2024-01-01T00:00:00Z"
`
	job := writeJob(t, dir, "job.yaml", spec)
	runCode(t, dir, nil, 0, "run", job)
	boundary := fakeMark(10) // ids 91-100 share it
	if st := statusOf(t, dir, job); st.HWM != boundary {
		t.Fatalf("saved mark %q, want %q", st.HWM, boundary)
	}
	at, _ := time.Parse(time.RFC3339, boundary)
	for _, id := range []int{5, 50} {
		api.Update(id, func(r *fakeapi.Record) { r.Name, r.UpdatedAt = "at the boundary", at })
	}
	log.values("updated_since")
	r := runCode(t, dir, nil, 0, "run", job)
	if got := log.values("updated_since"); !slices.Equal(got, []string{boundary}) {
		t.Errorf("sent updated_since %q, want the saved mark %q itself", got, boundary)
	}
	if r.Records != 12 || r.Updated != 2 {
		t.Errorf("second run: %+v, want ids 5, 50, 91-100 read and 2 updated", r)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}

// markAPI serves records in pages of 5 by id, filtered by since >= the
// record's field compared as a timestamp instant or a number.
type markAPI struct {
	field string
	mu    gosync.Mutex
	recs  []map[string]any
	log   []string // since of every request
}

func (m *markAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, _ := strconv.Atoi(q.Get("page"))
	since := q.Get("since")
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, since)
	sel := []map[string]any{}
	for _, rec := range m.recs {
		if since == "" || compareMark(rec[m.field], since) >= 0 {
			sel = append(sel, rec)
		}
	}
	from, to := min((page-1)*5, len(sel)), min(page*5, len(sel))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": sel[from:to]})
}

func (m *markAPI) put(rec map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range m.recs {
		if r["id"] == rec["id"] {
			m.recs[i] = rec
			return
		}
	}
	m.recs = append(m.recs, rec)
}

func (m *markAPI) sinces() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Compact(slices.Clone(m.log))
	m.log = nil
	return out
}

func compareMark(v any, since string) int {
	switch x := v.(type) {
	case float64:
		s, _ := strconv.ParseFloat(since, 64)
		switch {
		case x < s:
			return -1
		case x > s:
			return 1
		}
		return 0
	case string:
		a, _ := time.Parse(time.RFC3339, x)
		b, _ := time.Parse(time.RFC3339, since)
		return a.Compare(b)
	}
	return -1
}

func markJob(url, field, typ, initial, overlap string) string {
	return fmt.Sprintf(`name: marks
source:
  url: %s/items
  records: data
pagination:
  style: page
  size_param: per_page
  size: 5
incremental:
  field: %s
  param: since
  initial: %q
  overlap: %s
target:
  url: sqlite:out.db
  table: items
  key: [id]
  columns:
    id: {path: id, type: integer}
    name: name
    %s: {path: %s, type: %s}
`, url, field, initial, overlap, field, field, typ)
}

// readNames returns id → name of a table.
func readNames(t *testing.T, path, table string) map[int]string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, name FROM "` + table + `"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var id int
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		out[id] = name
	}
	return out
}

// Marks are compared as what they are: timestamps with any UTC offset as
// instants (saved and sent verbatim, in the form the API wrote them),
// numbers numerically.
// A string comparison would pick the wrong maximum in both data sets.
func TestIncrementalMarkKinds(t *testing.T) {
	tests := []struct {
		name, field, typ, initial, overlap string
		recs                               []map[string]any
		wantSent1, wantMark1               string
		later                              []map[string]any
		wantSent2, wantMark2               string
		want                               map[int]string
	}{
		{
			name: "timestamps with offsets", field: "ts", typ: "timestamp",
			initial: "2024-03-01T09:00:00+01:00", overlap: "1h",
			recs: []map[string]any{
				{"id": 1, "name": "a", "ts": "2024-03-01T08:59:00+01:00"}, // 07:59Z: before initial
				{"id": 2, "name": "b", "ts": "2024-03-01T10:00:00+02:00"}, // 08:00Z
				{"id": 3, "name": "c", "ts": "2024-03-01T07:30:00-01:00"}, // 08:30Z
				{"id": 4, "name": "d", "ts": "2024-03-01T14:00:00+02:00"}, // 12:00Z, the largest string
				{"id": 5, "name": "e", "ts": "2024-03-01T12:00:00-03:00"}, // 15:00Z, the latest instant
				{"id": 6, "name": "f", "ts": "2024-03-01T13:00:00Z"},
				{"id": 7, "name": "g", "ts": "2024-03-01T09:15:00.5+00:00"},
			},
			wantSent1: "2024-03-01T09:00:00+01:00", wantMark1: "2024-03-01T12:00:00-03:00", // initial as written; 15:00Z as the API wrote it
			later: []map[string]any{
				{"id": 3, "name": "c2", "ts": "2024-03-01T23:00:00+09:00"}, // 14:00Z: exactly the window
				{"id": 8, "name": "h", "ts": "2024-03-01T16:50:00+01:00"},  // 15:50Z
			},
			wantSent2: "2024-03-01T11:00:00-03:00", wantMark2: "2024-03-01T16:50:00+01:00", // 14:00Z, 15:50Z
			want: map[int]string{2: "b", 3: "c2", 4: "d", 5: "e", 6: "f", 7: "g", 8: "h"},
		},
		{
			name: "numbers", field: "seq", typ: "numeric", initial: "0", overlap: "5",
			recs: []map[string]any{
				{"id": 1, "name": "a", "seq": 9}, {"id": 2, "name": "b", "seq": 10},
				{"id": 3, "name": "c", "seq": 100}, {"id": 4, "name": "d", "seq": 2.5},
				{"id": 5, "name": "e", "seq": 99}, {"id": 6, "name": "f", "seq": 1e1},
			},
			wantSent1: "0", wantMark1: "100",
			later: []map[string]any{
				{"id": 7, "name": "g", "seq": 97}, {"id": 8, "name": "h", "seq": 101},
				{"id": 1, "name": "a2", "seq": 94}, // older than the window: not read
			},
			wantSent2: "95", wantMark2: "101",
			want: map[int]string{1: "a", 2: "b", 3: "c", 4: "d", 5: "e", 6: "f", 7: "g", 8: "h"},
		},
		{
			// Unix milliseconds (13 digits, read as such by windows and
			// end_param): an overlap written as a duration is 600,000 of
			// them, not 600, or a record committed 5 minutes late was
			// left behind the window for good.
			name: "unix milliseconds", field: "ms", typ: "numeric", initial: "1709280000000", overlap: "10m",
			recs: []map[string]any{
				{"id": 1, "name": "a", "ms": 1709280000000}, {"id": 2, "name": "b", "ms": 1709283600000},
			},
			wantSent1: "1709280000000", wantMark1: "1709283600000",
			later: []map[string]any{
				{"id": 3, "name": "c", "ms": 1709283300000}, // 5 minutes before the saved mark, committed late
			},
			wantSent2: "1709283000000", wantMark2: "1709283600000",
			want: map[int]string{1: "a", 2: "b", 3: "c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := &markAPI{field: tt.field}
			for _, r := range tt.recs {
				api.put(roundTrip(t, r))
			}
			url := serve(t, api)
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", markJob(url, tt.field, tt.typ, tt.initial, tt.overlap))
			r := runCode(t, dir, nil, 0, "run", job)
			if got := api.sinces(); !slices.Equal(got, []string{tt.wantSent1}) {
				t.Errorf("first run sent since=%q, want %q", got, tt.wantSent1)
			}
			if st := statusOf(t, dir, job); st.HWM != tt.wantMark1 || r.HWM != tt.wantMark1 {
				t.Errorf("saved mark %q (run said %q), want %q", st.HWM, r.HWM, tt.wantMark1)
			}
			for _, rec := range tt.later {
				api.put(roundTrip(t, rec))
			}
			runCode(t, dir, nil, 0, "run", job)
			if got := api.sinces(); !slices.Equal(got, []string{tt.wantSent2}) {
				t.Errorf("second run sent since=%q, want %q", got, tt.wantSent2)
			}
			if st := statusOf(t, dir, job); st.HWM != tt.wantMark2 {
				t.Errorf("saved mark %q, want %q", st.HWM, tt.wantMark2)
			}
			got := readNames(t, filepath.Join(dir, "out.db"), "items")
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("target %v, want %v", got, tt.want)
			}
		})
	}
}

// roundTrip turns Go numbers into the float64 that encoding/json decodes,
// as the handler compares decoded values.
func roundTrip(t *testing.T, rec map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
