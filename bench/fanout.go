package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// fanoutJob is an orders → order_items job over the shop at url: orders in
// pages of 100, each order's items in pages of size, the children of up to
// concurrency orders in flight.
func fanoutJob(url string, size, concurrency int, target string) string {
	return fmt.Sprintf(`name: bench
defaults:
  source: {base_url: %q, records: data}
  target: {url: %q}
resources:
  - name: orders
    source: {path: /orders}
    pagination: {style: page, size_param: per_page, size: 100, total_pages: meta.total_pages}
    target:
      table: orders
      key: [id]
      columns: {id: {path: id, type: integer}, customer_id: {path: customer_id, type: integer}, status: status, updated_at: {path: updated_at, type: timestamp}}
  - name: order_items
    parent: orders
    parent_rows: all
    fanout_concurrency: %d
    source: {path: "/orders/{parent.id}/items"}
    pagination: {style: page, size_param: per_page, size: %d, total_pages: meta.total_pages}
    target:
      table: order_items
      key: [order_id, id]
      columns: {order_id: {parent: id}, id: {path: id, type: integer}, sku: sku, qty: {path: qty, type: integer}}
`, url, target, concurrency, size)
}

// fanout measures a parent → child job: parents orders with three pages of
// items each (two full, one short; total_pages ends each walk on its third
// page, without a request to prove it the last), latency a request, the
// children of one order at a time against eight at once.
func (b *bench) fanout(parents int, latency time.Duration) error {
	const size = 10
	const children = 2*size + size/2
	fmt.Printf("\n## fan-out: %d orders × 3 pages of items (%d items each, pages of %d), %s per request\n", parents, children, size, latency)
	shop := fakeapi.NewShop(fakeapi.ShopOptions{Parents: parents, ChildCount: func(int) int { return children }, Latency: latency, Seed: 1})
	srv := httptest.NewServer(shop)
	defer srv.Close()
	want := int64(parents + parents*children)
	var rows []row
	walls := map[int]time.Duration{}
	for _, c := range []int{1, 8} {
		shop.ResetCounters()
		m, err := b.idemsync(fmt.Sprintf("fanout-c%d", c), fanoutJob(srv.URL, size, c, "sqlite:"+filepath.Join(b.dir, fmt.Sprintf("fanout-c%d.db", c))))
		if err != nil {
			return err
		}
		var res struct {
			Resources []struct {
				Inserted int64 `json:"inserted"`
				Updated  int64 `json:"updated"`
			} `json:"resources"`
		}
		if err := json.Unmarshal(m.stdout, &res); err != nil {
			return fmt.Errorf("fan-out, %d at once: %v: %s", c, err, m.stdout)
		}
		written := int64(0)
		for _, r := range res.Resources {
			written += r.Inserted + r.Updated
		}
		if written != want {
			return fmt.Errorf("fan-out, %d at once: %d rows written, want %d", c, written, want)
		}
		walls[c] = m.wall
		rows = append(rows, row{fmt.Sprintf("fanout_concurrency %d (%d requests)", c, shop.TotalRequests()), m.wall, m.cpu, m.rss, written})
	}
	b.table(int(want), rows)
	fmt.Printf("ratio: fanout_concurrency 8 is %.1fx faster than 1 (goal >= 6x)\n", walls[1].Seconds()/walls[8].Seconds())
	return nil
}
