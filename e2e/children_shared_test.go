package e2e

import (
	"encoding/json"
	"net/http"
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
