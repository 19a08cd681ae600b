package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"
)

// vmAPI serves records {id, name, updated_at} filtered by since. With
// byID false it is an hwm API (since=<mark>, ascending updated_at, then
// id, limit); with byID true a page API ordered by id (page, per_page)
// with since as an incremental window. With strcmp it compares since with
// updated_at as strings, as some APIs do.
type vmAPI struct {
	mu     gosync.Mutex
	recs   map[int]vmRec
	byID   bool
	strcmp bool
	sent   []string // since values received
}

type vmRec struct {
	ID        int    `json:"id"`
	Name      string `json:"name"`
	UpdatedAt string `json:"updated_at"`
}

func (a *vmAPI) set(id int, name, updated string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.recs == nil {
		a.recs = map[int]vmRec{}
	}
	a.recs[id] = vmRec{ID: id, Name: name, UpdatedAt: updated}
}

func (a *vmAPI) since() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.sent...)
}

func (a *vmAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := r.URL.Query()
	since := q.Get("since")
	a.sent = append(a.sent, since)
	before := func(x, y string) bool { // x < y
		if a.strcmp {
			return x < y
		}
		tx, _ := time.Parse(time.RFC3339Nano, x)
		ty, _ := time.Parse(time.RFC3339Nano, y)
		return tx.Before(ty)
	}
	var out []vmRec
	for _, rec := range a.recs {
		if since == "" || !before(rec.UpdatedAt, since) {
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !a.byID && out[i].UpdatedAt != out[j].UpdatedAt {
			return before(out[i].UpdatedAt, out[j].UpdatedAt)
		}
		return out[i].ID < out[j].ID
	})
	limit, _ := strconv.Atoi(q.Get("limit"))
	start := 0
	if a.byID {
		page, _ := strconv.Atoi(q.Get("page"))
		start = (page - 1) * limit
	}
	out = out[min(start, len(out)):]
	out = out[:min(limit, len(out))]
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func vmJob(url string, byID bool) string {
	pag := `pagination:
  style: hwm
  field: updated_at
  param: since
  size_param: limit
  size: 5
  overlap: 1m
`
	if byID {
		pag = `pagination:
  style: page
  size_param: limit
  size: 5
incremental:
  field: updated_at
  param: since
  overlap: 1m
`
	}
	return fmt.Sprintf(`name: marks
source:
  url: %s
%sretry: {attempts: 2, min_wait: 10ms, max_wait: 20ms}
target:
  url: sqlite:out.db
  table: orders
  key: [id]
  columns: {id: {path: id, type: integer}, name: name, updated_at: updated_at}
`, url, pag)
}

func assertVMRows(t *testing.T, dir string, a *vmAPI) {
	t.Helper()
	got := readNames(t, filepath.Join(dir, "out.db"), "orders")
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, r := range a.recs {
		if got[id] != r.Name {
			t.Errorf("id %d: target %q, source %q", id, got[id], r.Name)
		}
	}
	if len(got) != len(a.recs) {
		t.Errorf("target has %d rows, source %d", len(got), len(a.recs))
	}
}

// The API wrote 01:18:00.000Z; a mark sent back as 01:18:00Z made a
// string-comparing API drop the records tied on it past a page boundary
// (ids 6 and 7), exit 0. Marks go back verbatim.
func TestMarkSentVerbatim(t *testing.T) {
	t.Parallel()
	a := &vmAPI{strcmp: true}
	for id := 1; id <= 10; id++ {
		ts := "2024-01-01T01:00:00.000Z"
		switch {
		case id >= 4 && id <= 7:
			ts = "2024-01-01T01:18:00.000Z"
		case id > 7:
			ts = "2024-01-01T01:30:00.000Z"
		}
		a.set(id, fmt.Sprintf("r%d", id), ts)
	}
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", vmJob(serve(t, a), false))
	runCode(t, dir, nil, 0, "run", job)
	assertVMRows(t, dir, a)
	for _, s := range a.since() {
		if s != "" && !strings.HasSuffix(s, ".000Z") {
			t.Errorf("sent since=%q, not in the API's form", s)
		}
	}
	if hwm := statusOf(t, dir, job).HWM; hwm != "2024-01-01T01:30:00.000Z" {
		t.Errorf("saved mark %q, want the API's text 2024-01-01T01:30:00.000Z", hwm)
	}
}

// A record dated far in the future is synced, counted in one warning, and
// never moves the saved mark: later changes are still synced.
func TestMarkMaxFuture(t *testing.T) {
	for _, byID := range []bool{false, true} {
		name := "hwm"
		if byID {
			name = "incremental"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := &vmAPI{byID: byID}
			base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
			for id := 1; id <= 12; id++ {
				a.set(id, fmt.Sprintf("r%d", id), base.Add(time.Duration(id)*time.Second).Format(time.RFC3339))
			}
			a.set(13, "future", "2099-01-01T00:00:00Z")
			a.set(14, "future too", "2098-06-01T00:00:00Z")
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", vmJob(serve(t, a), byID))
			r := idemsync(t, dir, nil, "run", job)
			if r.code != 0 {
				t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
			}
			if n := strings.Count(r.stderr, "level=WARN"); n != 1 || !strings.Contains(r.stderr, "2099-01-01T00:00:00Z") || !strings.Contains(r.stderr, "records=2") {
				t.Errorf("want one warning counting 2 future records up to 2099-01-01T00:00:00Z, got %d:\n%s", n, r.stderr)
			}
			assertVMRows(t, dir, a)
			if hwm := statusOf(t, dir, job).HWM; strings.HasPrefix(hwm, "209") {
				t.Fatalf("saved mark %q is the future record's", hwm)
			}
			a.set(3, "changed later", time.Now().UTC().Format(time.RFC3339))
			runCode(t, dir, nil, 0, "run", job)
			assertVMRows(t, dir, a)
		})
	}
}

// incremental.format writes the window in the form the API asks for;
// as_received sends initial as it is written.
func TestMarkFormat(t *testing.T) {
	t.Parallel()
	for format, want := range map[string]string{
		"as_received": "2024-01-01T02:00:00.000+02:00", "rfc3339": "2024-01-01T00:00:00Z",
		"date": "2024-01-01", "unix": "1704067200", "unix_ms": "1704067200000", `"2006-01-02 15:04:05"`: "2024-01-01 00:00:00",
	} {
		var mu gosync.Mutex
		var got []string
		url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, r.URL.Query().Get("since"))
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`[]`))
		}))
		dir := t.TempDir()
		body := strings.Replace(vmJob(url, true), "  overlap: 1m\n", "  overlap: 1m\n  initial: \"2024-01-01T02:00:00.000+02:00\"\n  format: "+format+"\n", 1)
		job := writeJob(t, dir, "job.yaml", body)
		runCode(t, dir, nil, 0, "run", job)
		mu.Lock()
		if len(got) != 1 || got[0] != want {
			t.Errorf("format %s sent since=%q, want %q", format, got, want)
		}
		mu.Unlock()
	}
}
