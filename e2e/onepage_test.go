package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// onePageCase is a first page of a longer list that a style none job
// fetches: the body's extra fields and the query the job sends.
type onePageCase struct {
	name, query string
	meta        map[string]any
	names       string // what the error must name
}

var onePageCases = []onePageCase{
	{"has_more", "", map[string]any{"meta": map[string]any{"has_more": true}}, "meta.has_more"},
	{"done", "", map[string]any{"done": false}, "done"},
	{"next_url", "", map[string]any{"links": map[string]any{"next": "/list?page=2"}}, "links.next"},
	{"next_id", "", map[string]any{"next_id": 4}, "next_id"},
	{"full", "?limit=3", nil, "limit"},
}

// onePageAPI serves 3 records of a longer list on every request, with the
// case's fields beside them; /whole serves the same records as the whole
// list (has_more false, total 3).
func onePageAPI(t *testing.T, c onePageCase) string {
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := map[string]any{}
		for k, v := range c.meta {
			body[k] = v
		}
		if r.URL.Path == "/whole" {
			body = map[string]any{"has_more": false, "total": 3}
		}
		data := []map[string]any{}
		for id := 1; id <= 3; id++ {
			data = append(data, map[string]any{"id": id, "v": "v" + strconv.Itoa(id), "updated_at": "2024-01-01T00:00:00Z"})
		}
		body["data"] = data
		_ = json.NewEncoder(w).Encode(body)
	}))
}

func onePageJob(url, target, table, extra string) string {
	return fmt.Sprintf(`name: onepage
source:
  url: %s
  records: data
pagination:
  style: none
%starget:
  url: %s
  table: %s
  key: [id]
  columns:
    id: {path: id, type: integer}
    v: {path: v, type: text}
    updated_at: {path: updated_at, type: text}
`, url, extra, target, table)
}

// A style none job whose one page says the list goes on (a has-more flag
// that is true, done false, a next link or cursor, as many records as the
// size parameter it sent) is not completed under exit 0: exit 1 naming
// the field and the style to use, nothing committed; one_page: true is
// the opt-out for an API that echoes such a field on a true single page
// (docs/guarantees.md). A page with no sign of more completes as before.
func TestNoneSaysMore(t *testing.T) {
	testNoneRefuses(t, func(t *testing.T) modelTarget { return modelSQLite(t) })
}

func TestNoneSaysMorePostgres(t *testing.T) {
	pg := postgresURL(t)
	testNoneRefuses(t, func(t *testing.T) modelTarget { return modelPostgres(t, pg) })
}

func testNoneRefuses(t *testing.T, target func(t *testing.T) modelTarget) {
	for _, c := range onePageCases {
		t.Run(c.name, func(t *testing.T) {
			tgt := target(t)
			dir := t.TempDir()
			base := onePageAPI(t, c)
			job := writeJob(t, dir, "job.yaml", onePageJob(base+"/list"+c.query, tgt.url, tgt.table, ""))
			r := idemsync(t, dir, nil, "run", job)
			if r.code != 1 || !strings.Contains(r.stderr, c.names) || !strings.Contains(r.stderr, "one_page") {
				t.Fatalf("run: exit %d, want 1 naming %s and one_page\n%s", r.code, c.names, r.stderr)
			}
			if rows, _ := tgt.read(t, dir); len(rows) != 0 {
				t.Errorf("the refused page was committed: %d rows", len(rows))
			}
			if st := statusOf(t, dir, job); st.Status == "completed" {
				t.Errorf("status %q after the refusal", st.Status)
			}
			writeJob(t, dir, "job.yaml", onePageJob(base+"/list"+c.query, tgt.url, tgt.table, "  one_page: true\n"))
			if r := idemsync(t, dir, nil, "run", job); r.code != 0 {
				t.Fatalf("run with one_page: true: exit %d\n%s", r.code, r.stderr)
			}
			if rows, _ := tgt.read(t, dir); len(rows) != 3 {
				t.Errorf("one_page: true copied %d rows, want 3", len(rows))
			}
		})
	}
	t.Run("whole", func(t *testing.T) {
		tgt := target(t)
		dir := t.TempDir()
		base := onePageAPI(t, onePageCase{})
		job := writeJob(t, dir, "job.yaml", onePageJob(base+"/whole?limit=10", tgt.url, tgt.table, ""))
		if r := idemsync(t, dir, nil, "run", job); r.code != 0 {
			t.Fatalf("run of a whole list: exit %d\n%s", r.code, r.stderr)
		}
		if rows, _ := tgt.read(t, dir); len(rows) != 3 {
			t.Errorf("copied %d rows, want 3", len(rows))
		}
	})
}
