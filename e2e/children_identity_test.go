package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// Element identity in child tables (docs/job-file.md, "Child tables"):
// what the tables hold when one parent's array repeats an element key.

// bodyAPI serves the body last stored in it, as is, on every request.
func bodyAPI(t *testing.T) (url string, set func(string)) {
	var body atomic.Pointer[string]
	url = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(*body.Load()))
	}))
	return url, func(s string) { body.Store(&s) }
}

// identityJob is one page of orders whose lines (keyed by id) each have
// discounts (strings, by position) and notes (keyed by id).
func identityJob(url string, tg childTarget) string {
	table := "orders"
	if tg.schema != "" {
		table = tg.schema + ".orders"
	}
	return fmt.Sprintf(`name: identity
state: %s-identity.db
source:
  url: %s
  records: data
pagination: {style: none}
target:
  url: %s
  table: %s
  key: [id]
  columns:
    id: {path: id, type: integer}
  children:
    lines:
      path: lines
      table: order_lines
      key: id
      columns:
        id: {path: id, type: integer}
        sku: sku
      children:
        discounts:
          path: discounts
          table: order_line_discounts
          columns:
            code: "@this"
        notes:
          path: notes
          table: order_line_notes
          key: nid
          columns:
            nid: {path: nid, type: integer}
            text: text
`, tg.name, url, tg.url, table)
}

// An order whose lines repeat an id keeps the last of them (documented:
// "Two elements of one array with the same key keep the last"), and with
// it only that element's own arrays: the discounts and notes of the
// element it replaced are not stored under the line it kept. They were:
// the grandchild rows of both elements were written, the discount at
// position 1 and the note 7 of the dropped element under line 5 beside
// the kept one's. The same on every run, first load or rewrite.
func TestChildRepeatedKeyDropsArrays(t *testing.T) {
	dir := t.TempDir()
	url, set := bodyAPI(t)
	for _, tg := range childTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			job := writeJob(t, dir, tg.name+"-identity.yaml", identityJob(url, tg))
			want := func(what string, lines, discounts, notes []string) {
				t.Helper()
				for _, c := range []struct {
					table, sel string
					want       []string
				}{
					{"order_lines", `orders_id || '|' || id || '|' || sku`, lines},
					{"order_line_discounts", `orders_id || '|' || order_lines_id || '|' || _idemsync_pos || '|' || code`, discounts},
					{"order_line_notes", `orders_id || '|' || order_lines_id || '|' || nid || '|' || text`, notes},
				} {
					if got := childRows(t, tg, c.table, c.sel); !slices.Equal(got, c.want) {
						t.Errorf("%s: %s holds %q, want %q", what, c.table, got, c.want)
					}
				}
			}
			set(`{"data": [{"id": 1, "lines": [
				{"id": 5, "sku": "a", "discounts": ["x", "y"], "notes": [{"nid": 7, "text": "old"}]},
				{"id": 6, "sku": "c", "discounts": ["w"]},
				{"id": 5, "sku": "b", "discounts": ["z"], "notes": [{"nid": 8, "text": "new"}]}]}]}`)
			delRun(t, dir, 0, "run", job)
			want("first load", []string{"1|5|b", "1|6|c"}, []string{"1|5|0|z", "1|6|0|w"}, []string{"1|5|8|new"})

			set(`{"data": [{"id": 1, "lines": [
				{"id": 5, "sku": "a", "discounts": ["x", "y"], "notes": [{"nid": 7, "text": "old"}]},
				{"id": 6, "sku": "c", "discounts": ["w"]},
				{"id": 5, "sku": "d", "discounts": ["v"], "notes": [{"nid": 9, "text": "newer"}]}]}]}`)
			delRun(t, dir, 0, "run", job, "--full")
			want("rewrite", []string{"1|5|d", "1|6|c"}, []string{"1|5|0|v", "1|6|0|w"}, []string{"1|5|9|newer"})
		})
	}
}

// A child path through an array (assignees.#.login, as in the GitHub
// example) whose array is not an array on a later page: an object, a
// string, a number. GJSON finds nothing there, which was read as a missing
// array, so the run exited 0 and deleted the parent's live child rows.
// Only a missing or null array is an empty one (docs/job-file.md, "Child
// tables"): the record is bad (exit 1 under on_bad_record: fail), its rows as they were.
func TestChildPathThroughNonArrayIsBad(t *testing.T) {
	dir := t.TempDir()
	url, set := bodyAPI(t)
	for _, tg := range childTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			table := "issues"
			if tg.schema != "" {
				table = tg.schema + ".issues"
			}
			job := writeJob(t, dir, tg.name+"-assignees.yaml", fmt.Sprintf(`name: assignees
state: %s-assignees.db
source:
  url: %s
  records: data
pagination: {style: none}
target:
  url: %s
  table: %s
  key: [id]
  columns:
    id: {path: id, type: integer}
    title: title
  children:
    assignees:
      path: assignees.#.login
      table: issue_assignees
      columns:
        login: "@this"
`, tg.name, url, tg.url, table))
			set(`{"data": [{"id": 1, "title": "t", "assignees": [{"login": "ann"}, {"login": "bob"}]}]}`)
			delRun(t, dir, 0, "run", job)
			sel := `issues_id || '|' || _idemsync_pos || '|' || login`
			want := []string{"1|0|ann", "1|1|bob"}
			if got := childRows(t, tg, "issue_assignees", sel); !slices.Equal(got, want) {
				t.Fatalf("first load: issue_assignees holds %q, want %q", got, want)
			}
			for _, v := range []string{`{}`, `{"login": "ann"}`, `"ann"`, `3`} {
				set(`{"data": [{"id": 1, "title": "t2", "assignees": ` + v + `}]}`)
				r := delRun(t, dir, 1, "run", job, "--full")
				if !strings.Contains(r.stderr+r.stdout, "assignees") {
					t.Errorf("assignees %s: the error does not name the array:\n%s\n%s", v, r.stdout, r.stderr)
				}
				if got := childRows(t, tg, "issue_assignees", sel); !slices.Equal(got, want) {
					t.Errorf("assignees %s: issue_assignees holds %q, want %q", v, got, want)
				}
			}
			set(`{"data": [{"id": 1, "title": "t3", "assignees": null}]}`)
			delRun(t, dir, 0, "run", job, "--full")
			if got := childRows(t, tg, "issue_assignees", sel); len(got) != 0 {
				t.Errorf("assignees null: issue_assignees holds %q, want none", got)
			}
		})
	}
}
