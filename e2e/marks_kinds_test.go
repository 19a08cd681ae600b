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
	"time"
)

// leadInt reads a query value as a lenient API does (JavaScript's
// parseInt, PHP's intval): the leading digits, so "2025-06-01T12:00:00Z"
// is 2025. ok is false when there are none.
func leadInt(s string) (int64, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	return n, err == nil
}

// unixAPI keeps Unix-second marks and filters by since <= mark < until,
// both read as leniently as leadInt; a missing bound does not filter.
type unixAPI struct {
	mu    gosync.Mutex
	recs  map[int]int64
	query []string // the query of every request
}

func (a *unixAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := r.URL.Query()
	a.query = append(a.query, r.URL.RawQuery)
	since, hasSince := leadInt(q.Get("since"))
	until, hasUntil := leadInt(q.Get("until"))
	data := []map[string]any{}
	for id := 1; id <= len(a.recs)+10; id++ {
		m, ok := a.recs[id]
		if !ok || hasSince && m < since || hasUntil && m >= until {
			continue
		}
		data = append(data, map[string]any{"id": id, "name": fmt.Sprintf("rec %d", id), "updated": m})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
}

func (a *unixAPI) queries() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.query
	a.query = nil
	return out
}

// A windowed job on an API whose marks are Unix seconds, without initial:
// the first run's upper bound was written as an RFC 3339 timestamp, which
// such an API reads as the number 2025: the run read nothing, completed
// with exit 0 and saved the run's start as a timestamp, above every record
// it never stored, and every later run sent timestamps again. A bound is
// sent only in a form the marks are known to have, and the saved mark keeps
// the kind of the marks read.
func TestWindowsUnixMarksWithoutInitial(t *testing.T) {
	t.Parallel()
	now := time.Now().Unix()
	a := &unixAPI{recs: map[int]int64{1: now - 3*86400, 2: now - 86400, 3: now - 3600}}
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: unixwin
source: {url: "%s", records: data}
pagination: {style: none}
incremental: {field: updated, param: since, end_param: until, step: 1d, overlap: 1m}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, serve(t, a)))
	runCode(t, dir, nil, 0, "run", job)
	for _, q := range a.queries() {
		if strings.Contains(q, "T") {
			t.Errorf("first run sent %s to an API whose marks are numbers", q)
		}
	}
	hwm := statusOf(t, dir, job).HWM
	got := readItems(t, filepath.Join(dir, "out.db"), "", "")
	saved, err := strconv.ParseInt(hwm, 10, 64)
	if err != nil {
		t.Fatalf("saved mark %q is not a number like the marks read", hwm)
	}
	for id, m := range a.recs {
		if _, ok := got[id]; !ok && m <= saved {
			t.Errorf("exit 0 with saved mark %s, but record %d (mark %d) is not in the table", hwm, id, m)
		}
	}
	a.mu.Lock()
	a.recs[4] = time.Now().Unix()
	a.mu.Unlock()
	time.Sleep(1100 * time.Millisecond) // record 4 stamped before the run's second
	runCode(t, dir, nil, 0, "run", job)
	for _, q := range a.queries() {
		if strings.Contains(q, "T") {
			t.Errorf("second run sent %s to an API whose marks are numbers", q)
		}
	}
	if got := readItems(t, filepath.Join(dir, "out.db"), "", ""); len(got) != 4 {
		t.Errorf("after the second run the table holds %v, want records 1 to 4", got)
	}
}

// An overlap given as a bare number where the job file says the marks are
// timestamps (initial, or a format that writes timestamps) passed validate
// and failed only when a run started from a saved mark; a number written
// otherwise than as a plain decimal (0x10, 1e400) was read by big.Rat.
// validate refuses both, naming the key and what it accepts.
func TestOverlapNumberRefusedForTimestampMarks(t *testing.T) {
	t.Parallel()
	inc := func(extra string) string {
		return `name: ov
source: {url: "http://127.0.0.1:1/x", records: data}
incremental: {field: updated_at, param: since, ` + extra + `}
target: {url: "sqlite:out.db", table: items, key: [id]}
`
	}
	hwm := func(extra string) string {
		return `name: ov
source: {url: "http://127.0.0.1:1/x", records: data}
pagination: {style: hwm, field: updated_at, param: since, size_param: n, size: 10, ` + extra + `}
target: {url: "sqlite:out.db", table: items, key: [id]}
`
	}
	for _, tc := range []struct{ name, job, key string }{
		{"incremental number", inc(`initial: "2024-01-01T00:00:00Z", overlap: "5"`), "incremental.overlap"},
		{"incremental 1e400", inc(`initial: "2024-01-01T00:00:00Z", overlap: "1e400"`), "incremental.overlap"},
		{"incremental format", inc(`format: rfc3339, overlap: "5"`), "incremental.overlap"},
		{"hwm number", hwm(`initial: "2024-01-01T00:00:00Z", overlap: "5"`), "pagination.overlap"},
		{"hex", inc(`initial: "100", overlap: "0x10"`), "incremental.overlap"},
		{"numbers", inc(`initial: "100", overlap: "5"`), ""},
		{"duration", inc(`initial: "2024-01-01T00:00:00Z", overlap: 10m`), ""},
		{"unknown kind", inc(`overlap: "5"`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := idemsync(t, dir, nil, "validate", writeJob(t, dir, "job.yaml", tc.job))
			if tc.key == "" {
				if r.code != 0 {
					t.Errorf("validate: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
				}
				return
			}
			out := r.stdout + r.stderr
			if r.code != 2 || !strings.Contains(out, tc.key) || !strings.Contains(out, "duration") {
				t.Errorf("validate: exit %d, want 2 naming %s and what it accepts\n%s", r.code, tc.key, out)
			}
		})
	}
}

// listAPI serves its records, as they are, on one page, and logs since.
type listAPI struct {
	mu     gosync.Mutex
	recs   []map[string]any
	sinces []string
}

func (a *listAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sinces = append(a.sinces, r.URL.Query().Get("since"))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": a.recs})
}

// Marks of two kinds in one walk (a timestamp API with one record whose
// mark is the number 99999, a placeholder) were compared as strings:
// "99999" > "2024-…", so the run saved 99999 as the job's mark and the
// next run asked for the records changed since it. A mark of the other
// kind than the walk's (the mark it started from, else its first) is a
// bad record, and never the saved mark.
func TestMarksOfMixedKinds(t *testing.T) {
	t.Parallel()
	a := &listAPI{recs: []map[string]any{
		{"id": 1, "name": "a", "updated_at": "2024-03-01T10:00:00Z"},
		{"id": 2, "name": "b", "updated_at": 99999},
		{"id": 3, "name": "c", "updated_at": "2024-03-01T11:00:00Z"},
	}}
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: mixed
source: {url: "%s", records: data}
pagination: {style: none}
incremental: {field: updated_at, param: since, initial: "2024-01-01T00:00:00Z", overlap: 1m}
target: {url: "sqlite:out.db", table: items, key: [id], on_bad_record: skip}
`, serve(t, a)))
	runCode(t, dir, nil, 0, "run", job)
	st := statusOf(t, dir, job, "--dead-letters")
	if st.HWM != "2024-03-01T11:00:00Z" {
		t.Errorf("saved mark %q, want 2024-03-01T11:00:00Z, the highest timestamp", st.HWM)
	}
	if len(st.Dead) != 1 || !strings.Contains(st.Dead[0].Reason, "99999") {
		t.Errorf("dead letters %+v, want record 2 with its mark 99999", st.Dead)
	}
	runCode(t, dir, nil, 0, "run", job)
	if last := a.sinces[len(a.sinces)-1]; last != "2024-03-01T10:59:00Z" {
		t.Errorf("second run sent since=%s, want 2024-03-01T10:59:00Z", last)
	}
}
