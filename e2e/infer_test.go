package e2e

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// inferRecord is record id of the inferred-schema tests: discount first
// appears on page 5 (ids 41-50 and on).
func inferRecord(id int) string {
	rec := fmt.Sprintf(`{"id":%d,"name":"n%d","count":%d,"amount":%d.25,"ok":%v,"customer":{"email":"c%d@x"},"tags":["t%d"]`,
		id, id, id*2, id, id%2 == 0, id, id)
	if id > 40 {
		rec += fmt.Sprintf(`,"discount":%d.5`, id)
	}
	return rec + "}"
}

func inferJob(url, onBad string) string {
	return fmt.Sprintf(`name: infer
source:
  url: %s/items
  records: data
pagination:
  style: page
  size_param: per_page
  size: 10
target:
  url: sqlite:out.db
  table: orders
  key: [id]
  on_bad_record: %s
`, url, onBad)
}

// inferredRow is one row of the inferred table, in text form.
type inferredRow struct{ name, count, amount, ok, customer, tags, discount string }

func readInferred(t *testing.T, path string) map[int]inferredRow {
	t.Helper()
	db := openSQLite(t, path)
	rows, err := db.Query(`SELECT id, name, count, amount, ok, customer, tags, discount FROM orders`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]inferredRow{}
	for rows.Next() {
		var id int
		var v [7]sql.NullString
		if err := rows.Scan(&id, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]); err != nil {
			t.Fatal(err)
		}
		out[id] = inferredRow{v[0].String, v[1].String, v[2].String, v[3].String, v[4].String, v[5].String, v[6].String}
	}
	return out
}

func wantInferred(id int) inferredRow {
	r := inferredRow{name: fmt.Sprintf("n%d", id), count: fmt.Sprint(id * 2), amount: fmt.Sprintf("%d.25", id),
		ok: "0", customer: fmt.Sprintf(`{"email":"c%d@x"}`, id), tags: fmt.Sprintf(`["t%d"]`, id)}
	if id%2 == 0 {
		r.ok = "1"
	}
	if id > 40 {
		r.discount = fmt.Sprintf("%d.5", id)
	}
	return r
}

// Without target.columns, one column per top-level field with inferred
// types (objects and arrays as JSON); a field first seen on page 5 adds a
// column without losing or changing the rows written before; values that
// the column's inferred type cannot take ("many", 2.5 in an integer
// column) widen it to text, never a bad record, and the rows written
// before keep their values. A process killed right after the column was
// added continues cleanly.
func TestInferredColumns(t *testing.T) {
	clash := map[int]string{
		55: `{"id":55,"name":"n55","count":"many"}`,
		56: `{"id":56,"name":"n56","count":2.5}`,
	}
	for _, tt := range []struct {
		name      string
		failpoint string
	}{
		{"clean", ""},
		{"killed after the column was added", "target-committed:5"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newRawAPI(60, nil)
			for id := 1; id <= 60; id++ {
				raw := inferRecord(id)
				if c, ok := clash[id]; ok {
					raw = c
				}
				api.set(id-1, raw)
			}
			dir := t.TempDir()
			db := filepath.Join(dir, "out.db")
			job := writeJob(t, dir, "job.yaml", inferJob(serve(t, api), "skip"))
			if tt.failpoint != "" {
				k := idemsync(t, dir, []string{"IDEMSYNC_TEST_FAILPOINT=" + tt.failpoint}, "run", job)
				if k.code != -1 && k.code != 137 {
					t.Fatalf("run with failpoint: exit %d, want killed: %s", k.code, k.stderr)
				}
			}
			r := runCode(t, dir, nil, 0, "run", job)
			if r.Status != "completed" || r.Skipped != 0 {
				t.Errorf("run: %+v, want completed with none skipped", r)
			}
			got := readInferred(t, db)
			if len(got) != 60 {
				t.Errorf("%d rows, want 60", len(got))
			}
			for id := 1; id <= 60; id++ {
				want := wantInferred(id)
				if id == 55 || id == 56 {
					want = inferredRow{name: fmt.Sprintf("n%d", id), count: map[int]string{55: "many", 56: "2.5"}[id]}
				}
				if got[id] != want {
					t.Errorf("row %d: %+v, want %+v", id, got[id], want)
				}
			}
			if st := statusOf(t, dir, job, "--dead-letters"); len(st.Dead) != 0 {
				t.Errorf("dead letters: %+v", st.Dead)
			}

			// Rows written before the column existed or was widened are
			// not rewritten.
			again := runCode(t, dir, nil, 0, "run", job)
			if again.Updated != 0 || again.Inserted != 0 || again.Unchanged != 60 {
				t.Errorf("second run: %+v, want all 60 rows unchanged", again)
			}
		})
	}
}

// A key column is never widened: under on_bad_record: fail a key value its
// inferred type cannot take stops the run with exit 1 naming the record and
// the column; the rows before it stay.
func TestInferredTypeClashFails(t *testing.T) {
	api := newRawAPI(30, nil)
	for id := 1; id <= 30; id++ {
		api.set(id-1, inferRecord(id))
	}
	api.set(24, `{"id":25,"name":{"first":"x"}}`) // name was inferred text; an object is JSON text, not a clash
	api.set(26, `{"id":"k27","ok":"maybe"}`)      // a bad key: its ok widens nothing
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", inferJob(serve(t, api), "fail"))
	r := idemsync(t, dir, nil, "run", job)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
	}
	for _, w := range []string{"page 3", "record 6", "column id", "want a 64-bit integer"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("error does not name %q: %s", w, r.stderr)
		}
	}
	if got := countRows(t, filepath.Join(dir, "out.db"), "orders"); got != 20 {
		t.Errorf("%d rows, want pages 1-2's 20", got)
	}
}
