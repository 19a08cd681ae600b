package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A child table (target.children) belongs to its parent resource: its rows
// are the parent records' arrays. Another resource of the file writing that
// table with deletes: hard swept the rows its own source did not list, the
// live children of live orders, and since an unchanged order does not
// rewrite its children, they stayed gone with exit 0 on every run. The file
// is refused now (validate too), before anything is fetched, naming the
// table and both resources; with deletes: keep too, since the parent's
// writes replace every child row of a written order.
func TestChildTableSharedWithAnotherResourceRefused(t *testing.T) {
	var reqs atomic.Int64
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		body := map[string]any{"data": []map[string]any{{"orders_id": 1, "id": 1, "sku": "a"}}}
		if r.URL.Path == "/orders" {
			body = map[string]any{"data": []map[string]any{
				{"id": 1, "lines": []map[string]any{{"id": 1, "sku": "a"}, {"id": 2, "sku": "b"}}},
				{"id": 2, "lines": []map[string]any{{"id": 3, "sku": "c"}}},
			}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	for _, deletes := range []string{"hard", "keep"} {
		t.Run(deletes, func(t *testing.T) {
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", `name: shop
defaults:
  source: {base_url: "`+url+`", records: data}
  pagination: {style: none}
  target: {url: "sqlite:out.db"}
resources:
  - name: orders
    source: {path: /orders}
    target:
      table: orders
      key: [id]
      columns: {id: {path: id, type: integer}}
      children:
        lines:
          path: lines
          table: order_lines
          key: id
          columns: {id: {path: id, type: integer}, sku: sku}
  - name: lines
    source: {path: /lines}
    target:
      table: order_lines
      key: [orders_id, id]
      deletes: `+deletes+`
      max_delete_ratio: 1
      columns: {orders_id: {path: orders_id, type: integer}, id: {path: id, type: integer}, sku: sku}
`)
			for _, args := range [][]string{{"validate", job}, {"run", job}, {"run", job}, {"run", job}} {
				r := idemsync(t, dir, nil, args...)
				if r.code == 0 && args[0] == "run" {
					var n int
					if err := openSQLite(t, filepath.Join(dir, "out.db")).QueryRow(`SELECT count(*) FROM order_lines`).Scan(&n); err == nil && n < 3 {
						t.Fatalf("%v: exit 0 with %d of the 3 live order lines left", args, n)
					}
				}
				if r.code != 2 || !strings.Contains(r.stderr, "resources orders and lines both write table order_lines, a child table of resource orders") {
					t.Fatalf("%v: exit %d, want 2 naming the child table\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
				}
			}
			if n := reqs.Load(); n != 0 {
				t.Fatalf("%d requests by refused runs", n)
			}
		})
	}
}

// A child table has no other writer, across job files too: a job file
// writing another file's child table (as its target.table, or as a child
// table of its own) had its rows deleted whenever the other job rewrote a
// parent's children, and its keep-job sharing went unseen by the owners'
// check, which registered parent tables only. Each job now registers its
// child tables as their only writer, so the second file is refused (exit
// 2, nothing fetched) whichever runs first, and claim hands them over.
func TestChildTableOfAnotherJobFileRefused(t *testing.T) {
	skipWithPostgresState(t, "the refusals name the owner's state file")
	var sku atomic.Int64
	var reqs atomic.Int64
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		body := map[string]any{"data": []map[string]any{{"orders_id": 1, "id": 9, "sku": "from-b"}}}
		if r.URL.Path == "/orders" {
			body = map[string]any{"data": []map[string]any{
				{"id": 1, "lines": []map[string]any{{"id": 1, "sku": fmt.Sprint("a", sku.Load())}}},
			}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	parentJob := func(name string) string {
		return `name: ` + name + `
source: {url: "` + url + `/orders", records: data}
pagination: {style: none}
target:
  url: "sqlite:../out.db"
  table: ` + name + `
  key: [id]
  columns: {id: {path: id, type: integer}}
  children:
    lines:
      path: lines
      table: order_lines
      key: id
      columns: {id: {path: id, type: integer}, sku: sku}
`
	}
	plainJob := `name: lines
source: {url: "` + url + `/lines", records: data}
pagination: {style: none}
target:
  url: "sqlite:../out.db"
  table: order_lines
  key: [orders_id, id]
  columns: {orders_id: {path: orders_id, type: integer}, id: {path: id, type: integer}, sku: sku}
`
	for _, first := range []string{"parent", "plain"} {
		t.Run(first+" first", func(t *testing.T) {
			dir := t.TempDir()
			for _, sub := range []string{"a", "b", "c"} {
				if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			jobA := writeJob(t, filepath.Join(dir, "a"), "orders.yaml", parentJob("orders"))
			jobB := writeJob(t, filepath.Join(dir, "b"), "lines.yaml", plainJob)
			jobC := writeJob(t, filepath.Join(dir, "c"), "orders2.yaml", parentJob("orders2"))
			stateOf := func(sub string) string {
				return realPathOf(t, filepath.Join(dir, sub, ".idemsync", "state.db"))
			}
			owner, other, ownerSub := jobA, jobB, "a"
			ownerName := "orders"
			if first == "plain" {
				owner, other, ownerSub, ownerName = jobB, jobA, "b", "lines"
			}
			if r := idemsync(t, filepath.Join(dir, ownerSub), nil, "run", owner); r.code != 0 {
				t.Fatalf("the first job: exit %d\n%s", r.code, r.stderr)
			}
			before := reqs.Load()
			refusals := [][]string{{"run", other}, {"validate", "--connect", other}}
			if first == "parent" {
				refusals = append(refusals, []string{"run", jobC})
			}
			for _, args := range refusals {
				r := idemsync(t, filepath.Dir(args[len(args)-1]), nil, args...)
				want := "job " + ownerName + " (state file " + stateOf(ownerSub) + ")"
				if r.code != 2 || !strings.Contains(r.stderr, "order_lines") || !strings.Contains(r.stderr, want) {
					t.Fatalf("%v: exit %d, want 2 naming order_lines and %s\nstdout: %s\nstderr: %s", args, r.code, want, r.stdout, r.stderr)
				}
			}
			if n := reqs.Load() - before; n > 1 {
				t.Fatalf("%d requests by the refused runs (validate --connect may fetch one page)", n)
			}
			if first == "plain" {
				return
			}
			// The parent job changes order 1: its lines are rewritten, and
			// no other job's row can be among them.
			sku.Add(1)
			if r := idemsync(t, filepath.Join(dir, "a"), nil, "run", jobA); r.code != 0 {
				t.Fatalf("the owner's second run: exit %d\n%s", r.code, r.stderr)
			}
			// The operator hands the child table to job B.
			if r := idemsync(t, filepath.Join(dir, "b"), nil, "claim", jobB); r.code != 0 {
				t.Fatalf("claim: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if r := idemsync(t, filepath.Join(dir, "a"), nil, "run", jobA); r.code != 2 || !strings.Contains(r.stderr, "job lines (state file "+stateOf("b")+")") {
				t.Fatalf("the former owner after claim: exit %d\n%s", r.code, r.stderr)
			}
		})
	}
}
