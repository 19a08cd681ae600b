package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
)

// pagedMarksAPI serves its records in pages of size (?page=1, 2, …), each
// record's mark in field u; a since parameter, when sent, keeps the records
// whose mark, as text, is not below it (an API comparing as strings).
type pagedMarksAPI struct {
	mu     gosync.Mutex
	size   int
	recs   []map[string]any
	sinces []string
}

func (a *pagedMarksAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := r.URL.Query()
	since := q.Get("since")
	a.sinces = append(a.sinces, since)
	var list []map[string]any
	for _, rec := range a.recs {
		if since == "" || fmt.Sprint(rec["u"]) >= since {
			list = append(list, rec)
		}
	}
	p, _ := strconv.Atoi(q.Get("page"))
	if p < 1 {
		p = 1
	}
	lo, hi := min((p-1)*a.size, len(list)), min(p*a.size, len(list))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": append([]map[string]any{}, list[lo:hi]...)})
}

// A walk without a mark to start from (a first run without initial) took
// each page's kind from that page's own first mark: page 2 opening with
// the placeholder 99999 made its timestamps bad records (dead-lettered,
// never stored), and the run's highest mark, max(timestamp, 99999) compared
// as text, was 99999: saved, above the records never stored, and the next
// run asked since=99999. The walk's kind is that of the first mark the run
// reads, in page order, on every page after it (fetched one after another
// or several at once, or by the run that continues it).
func TestMarksKindAcrossPages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		conc    int
		stopped bool // the first run stops after page 1, the next continues it
	}{{"one at a time", 1, false}, {"three at once", 3, false}, {"continued", 1, true}} {
		conc := tc.conc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &pagedMarksAPI{size: 3, recs: []map[string]any{
				{"id": 1, "name": "a", "u": "2024-03-01T10:00:00Z"},
				{"id": 2, "name": "b", "u": "2024-03-01T11:00:00Z"},
				{"id": 3, "name": "c", "u": "2024-03-01T12:00:00Z"},
				{"id": 4, "name": "d", "u": 99999},
				{"id": 5, "name": "e", "u": "2024-03-02T10:00:00Z"},
				{"id": 6, "name": "f", "u": "2024-03-02T11:00:00Z"},
				{"id": 7, "name": "g", "u": "2024-03-03T09:00:00Z"},
			}}
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: kinds
source: {url: "%s", records: data, concurrency: %d}
pagination: {style: page, size_param: per_page, size: 3}
incremental: {field: u, param: since, overlap: 1m}
target: {url: "sqlite:out.db", table: items, key: [id], on_bad_record: skip}
`, serve(t, a), conc))
			if tc.stopped {
				runCode(t, dir, nil, 0, "run", job, "--max-pages", "1")
			}
			runCode(t, dir, nil, 0, "run", job)
			st := statusOf(t, dir, job, "--dead-letters")
			if st.HWM != "2024-03-03T09:00:00Z" {
				t.Errorf("saved mark %q, want 2024-03-03T09:00:00Z, the highest timestamp", st.HWM)
			}
			if len(st.Dead) != 1 || !strings.Contains(st.Dead[0].Reason, "99999") {
				t.Errorf("dead letters %+v, want record 4 alone, with its mark 99999", st.Dead)
			}
			got := readItems(t, filepath.Join(dir, "out.db"), "", "")
			for _, id := range []int{1, 2, 3, 5, 6, 7} {
				if _, ok := got[id]; !ok {
					t.Errorf("record %d (a timestamp) is not in the table: %v", id, got)
				}
			}
		})
	}
}

// A full pass of a job whose saved mark is of the other kind than the
// marks it reads (the API went from numbers to timestamps; `run --full` to
// read it all again) compared its marks with the saved one as text:
// "2024-…" < "99999", so the saved mark stayed 99999, and every later run
// asked since=99939 and read nothing new, with exit 0. A full pass reads
// from the start: its marks replace a saved mark of the other kind; no
// mark is compared with one of the other kind.
func TestMarksFullPassReplacesOtherKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, pag, inc string }{
		{"incremental", "{style: page, size_param: per_page, size: 10}", "\nincremental: {field: u, param: since, overlap: 1m}"},
		{"hwm", "{style: hwm, field: u, param: since, size_param: limit, size: 10, overlap: 1m}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &pagedMarksAPI{size: 10, recs: []map[string]any{
				{"id": 1, "name": "a", "u": 99990},
				{"id": 2, "name": "b", "u": 99999},
			}}
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: kinds
source: {url: "%s", records: data}
pagination: %s%s
target: {url: "sqlite:out.db", table: items, key: [id]}
`, serve(t, a), tc.pag, tc.inc))
			runCode(t, dir, nil, 0, "run", job)
			if hwm := statusOf(t, dir, job).HWM; hwm != "99999" {
				t.Fatalf("saved mark %q after the first run, want 99999", hwm)
			}
			a.mu.Lock()
			a.recs = []map[string]any{
				{"id": 1, "name": "a2", "u": "2024-03-01T10:00:00Z"},
				{"id": 2, "name": "b2", "u": "2024-03-01T11:00:00Z"},
			}
			a.mu.Unlock()
			runCode(t, dir, nil, 0, "run", job, "--full")
			if hwm := statusOf(t, dir, job).HWM; hwm != "2024-03-01T11:00:00Z" {
				t.Errorf("saved mark %q after the full pass, want 2024-03-01T11:00:00Z, its highest mark", hwm)
			}
			a.mu.Lock()
			a.recs = append(a.recs, map[string]any{"id": 3, "name": "c", "u": "2024-03-02T10:00:00Z"})
			a.mu.Unlock()
			runCode(t, dir, nil, 0, "run", job)
			if got := readItems(t, filepath.Join(dir, "out.db"), "", ""); got[3] != "c" {
				t.Errorf("record 3, changed after the full pass, is not in the table: %v (since sent: %v)", got, a.sinces)
			}
		})
	}
}

// An hwm replay whose --from and --to are marks of two kinds (a number and
// a timestamp) was bounded by comparing them as text: --from 100 --to
// 2024-… was taken as a range ("1" < "2") and its end decided page by page
// the same way; --from 99999 --to 2024-… was refused as --to before
// --from. Both are refused, naming the two kinds.
func TestMarksReplayRangeOfTwoKinds(t *testing.T) {
	t.Parallel()
	a := &pagedMarksAPI{size: 10, recs: []map[string]any{{"id": 1, "name": "a", "u": 150}}}
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: kinds
source: {url: "%s", records: data}
pagination: {style: hwm, field: u, param: since, size_param: limit, size: 10}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, serve(t, a)))
	for _, r := range [][2]string{{"100", "2024-01-01T00:00:00Z"}, {"99999", "2024-01-01T00:00:00Z"}, {"2024-01-01T00:00:00Z", "99999"}} {
		res := idemsync(t, dir, nil, "replay", job, "--from", r[0], "--to", r[1])
		out := res.stdout + res.stderr
		if res.code != 2 || !strings.Contains(out, "timestamp") || !strings.Contains(out, "number") {
			t.Errorf("replay --from %s --to %s: exit %d, want 2 naming a timestamp and a number\n%s", r[0], r[1], res.code, out)
		}
	}
}
