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

// rawAPI serves raw JSON records by id order in pages of 10
// ({"data":[...]}, ?page=N), so tests can serve records no real encoder
// would produce.
type rawAPI struct {
	mu   gosync.Mutex
	recs []string
}

func (a *rawAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	page, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || page < 1 {
		http.Error(w, `{"error":"bad page"}`, http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	from, to := min((page-1)*10, len(a.recs)), min(page*10, len(a.recs))
	body := `{"data":[` + strings.Join(a.recs[from:to], ",") + `]}`
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(body))
}

func (a *rawAPI) set(i int, raw string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recs[i] = raw
}

// goodRecord is record id as the bad-record tests expect it in the target.
func goodRecord(id int) string {
	return fmt.Sprintf(`{"id":%d,"name":"n%d","total":"%d.50","ts":"2024-02-01T00:00:%02dZ"}`, id, id, id, id)
}

// newRawAPI serves records 1..n, good unless bad replaces them (by id).
func newRawAPI(n int, bad map[int]string) *rawAPI {
	a := &rawAPI{}
	for id := 1; id <= n; id++ {
		rec := goodRecord(id)
		if b, ok := bad[id]; ok {
			rec = b
		}
		a.recs = append(a.recs, rec)
	}
	return a
}

func rawJob(url, onBad string) string {
	return fmt.Sprintf(`name: raw
source:
  url: %s/items
  records: data
pagination:
  style: page
  size_param: per_page
  size: 10
incremental:
  field: ts
  param: since
  initial: "2024-01-01T00:00:00Z"
target:
  url: sqlite:out.db
  table: orders
  key: [id]
  on_bad_record: %s
  columns:
    id: {path: id, type: integer}
    name: name
    total: {path: total, type: numeric}
`, url, onBad)
}

// countRows returns the number of rows of a SQLite table.
func countRows(t *testing.T, path, table string) int {
	t.Helper()
	var n int
	db := openSQLite(t, path)
	if err := db.QueryRow(`SELECT count(*) FROM "` + table + `"`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The bad records of these tests: on page 2 (ids 11-20), at index id-11.
var badRecords = []struct {
	id     int
	raw    string
	column string
	reason string
}{
	{13, `{"name":"no key","total":"1.00","ts":"2024-02-01T00:00:13Z"}`, "column id", "key is missing or null"},
	{15, `{"id":null,"name":"null key","ts":"2024-02-01T00:00:15Z"}`, "column id", "key is missing or null"},
	{17, `{"id":17,"name":"bad total","total":"abc","ts":"2024-02-01T00:00:17Z"}`, "column total", "want a decimal number"},
	{18, `{"id":"18x","name":"bad id","ts":"2024-02-01T00:00:18Z"}`, "column id", "want a 64-bit integer"},
	{20, `{"id":20,"name":"bad mark","total":"2","ts":"yesterday"}`, "column ts", "mark"},
}

// on_bad_record: fail — a record with a missing or null key, a value that
// cannot be converted, or an unusable incremental mark fails its page with
// exit 1 naming the page, the record, the field and the reason; nothing of
// that page lands and the checkpoint stays on it, so the run continues
// from there once the source is fixed.
func TestBadRecordFails(t *testing.T) {
	for _, b := range badRecords {
		t.Run(strconv.Itoa(b.id), func(t *testing.T) {
			t.Parallel()
			api := newRawAPI(30, map[int]string{b.id: b.raw})
			dir := t.TempDir()
			db := filepath.Join(dir, "out.db")
			job := writeJob(t, dir, "job.yaml", rawJob(serve(t, api), "fail"))
			for try := 1; try <= 2; try++ {
				r := idemsync(t, dir, nil, "run", job)
				if r.code != 1 {
					t.Fatalf("try %d: exit %d, want 1: %s", try, r.code, r.stderr)
				}
				for _, want := range []string{"page 2", fmt.Sprintf("record %d", b.id-11), b.column, b.reason} {
					if !strings.Contains(r.stderr, want) {
						t.Errorf("try %d: error does not name %q:\n%s", try, want, r.stderr)
					}
				}
				st := statusOf(t, dir, job)
				if st.Status != "failed" || st.Checkpoint != "page 2" || st.LastRun == nil || !strings.Contains(st.LastRun.Error, b.column) || st.HWM != "" {
					t.Errorf("try %d: status %+v, want failed at page 2 with the error and no mark", try, st)
				}
				if n := countRows(t, db, "orders"); n != 10 {
					t.Errorf("try %d: %d rows, want page 1's 10", try, n)
				}
			}
			api.set(b.id-1, goodRecord(b.id))
			r := runCode(t, dir, nil, 0, "run", job)
			if r.RunID != 1 || r.Status != "completed" || r.Inserted != 30 || r.Skipped != 0 {
				t.Errorf("run after fixing the source: %+v, want run 1 continued to 30 rows", r)
			}
			if st := statusOf(t, dir, job); st.DeadLetters != 0 || st.HWM != "2024-02-01T00:00:30Z" {
				t.Errorf("status after the fix: %+v", st)
			}
		})
	}
}

// on_bad_record: skip — N bad records of M land as M−N rows plus N dead
// letters holding the raw JSON, the reason and the run; status counts
// them and status --dead-letters lists them as a table and as JSON.
func TestBadRecordsDeadLettered(t *testing.T) {
	bad := map[int]string{}
	for _, b := range badRecords {
		bad[b.id] = b.raw
	}
	api := newRawAPI(30, bad)
	dir := t.TempDir()
	db := filepath.Join(dir, "out.db")
	job := writeJob(t, dir, "job.yaml", rawJob(serve(t, api), "skip"))
	r := runCode(t, dir, nil, 0, "run", job)
	n := len(badRecords)
	if r.Status != "completed" || r.Records != 30 || r.Skipped != int64(n) || r.Inserted != int64(30-n) {
		t.Errorf("run: %+v, want 30 records, %d skipped, %d inserted", r, n, 30-n)
	}
	if got := countRows(t, db, "orders"); got != 30-n {
		t.Errorf("%d rows, want %d", got, 30-n)
	}
	names := readNames(t, db, "orders")
	for id := 1; id <= 30; id++ {
		_, landed := names[id]
		if _, isBad := bad[id]; landed == isBad {
			t.Errorf("record %d: landed %v, bad %v", id, landed, isBad)
		}
	}

	st := statusOf(t, dir, job, "--dead-letters")
	if st.DeadLetters != int64(n) || len(st.Dead) != n {
		t.Fatalf("status: %d dead letters, %d listed, want %d: %+v", st.DeadLetters, len(st.Dead), n, st)
	}
	byIndex := map[int]deadLetterJSON{}
	for _, d := range st.Dead {
		byIndex[d.Index] = d
	}
	for _, b := range badRecords {
		d, ok := byIndex[b.id-11]
		switch {
		case !ok:
			t.Errorf("no dead letter for record %d", b.id-11)
		case d.Raw != b.raw || d.RunID != r.RunID || d.Position != "page 2" || !strings.Contains(d.Reason, b.column) || !strings.Contains(d.Reason, b.reason):
			t.Errorf("dead letter %+v, want raw %s, run %d, page 2, reason naming %q and %q", d, b.raw, r.RunID, b.column, b.reason)
		}
	}
	if plain := statusOf(t, dir, job); plain.Dead != nil || plain.DeadLetters != int64(n) {
		t.Errorf("status without --dead-letters: %+v", plain)
	}

	table := idemsync(t, dir, nil, "status", job, "--dead-letters")
	if table.code != 0 {
		t.Fatalf("status --dead-letters: exit %d: %s", table.code, table.stderr)
	}
	wants := []string{fmt.Sprintf("dead letters (%d)", n), fmt.Sprintf("%d skipped", n)}
	for _, b := range badRecords {
		wants = append(wants, b.reason, b.raw)
	}
	for _, w := range wants {
		if !strings.Contains(table.stdout, w) {
			t.Errorf("status --dead-letters table lacks %q:\n%s", w, table.stdout)
		}
	}
	// The raw JSON is kept verbatim: it parses back to the record served.
	for _, d := range st.Dead {
		if !json.Valid([]byte(d.Raw)) {
			t.Errorf("dead letter raw is not JSON: %q", d.Raw)
		}
	}
}
