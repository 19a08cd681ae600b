package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql, to read the child table back

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Child tables (docs/job-file.md, "Child tables"; issue 29's goal): a
// first load of orders with 5 line items each, idemsync with
// target.children against a program flattening the same pages by hand into
// the same two tables, and what an unchanged re-sync writes to the child
// table (goal: nothing).

var childrenBench = flag.Bool("children", false, "only the child table figures: orders × 5 line items (-records orders), target.children against flattening by hand; with -pg PostgreSQL too")

// linesPerOrder is the line items of every order of the child figures.
const linesPerOrder = 5

// childOrder is an order of the child figures' API as the loader decodes
// it.
type childOrder struct {
	ID        int64       `json:"id"`
	Name      string      `json:"name"`
	Total     json.Number `json:"total"`
	UpdatedAt time.Time   `json:"updated_at"`
	LineItems []struct {
		ID       int64       `json:"id"`
		SKU      string      `json:"sku"`
		Quantity int64       `json:"quantity"`
		Price    json.Number `json:"price"`
	} `json:"line_items"`
}

// ordersListed, when above 0, lists only that many of serveOrders' n
// orders, and ordersEdition changes every line item's quantity: the
// growing re-sync of the child figures lists a few orders, then all of
// them, changed.
var ordersListed, ordersEdition atomic.Int64

// serveOrders starts, in-process, an API of n orders with linesPerOrder
// line items each, in pages (?page=P&per_page=S, from 1; a page past the
// end is empty). Every page is the same on every request, until
// ordersListed or ordersEdition change.
func serveOrders(n int) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		size, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		if page < 1 || size < 1 {
			http.Error(w, "page and per_page required", http.StatusBadRequest)
			return
		}
		listed, edition := n, int(ordersEdition.Load())
		if l := ordersListed.Load(); l > 0 {
			listed = int(l)
		}
		var b strings.Builder
		b.WriteString(`{"data":[`)
		for id := (page-1)*size + 1; id <= min(page*size, listed); id++ {
			if id > (page-1)*size+1 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":%d,"name":"Order %d","total":%d.%02d,"updated_at":%q,"line_items":[`,
				id, id, id%997, id%100, base.Add(time.Duration(id)*time.Second).Format(time.RFC3339))
			for j := range linesPerOrder {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"id":%d,"sku":"sku-%d","quantity":%d,"price":%d.%02d}`,
					id*10+j, (id+j)%50, 1+(id+j+edition)%9, (id*7+j)%500, j*11)
			}
			b.WriteString(`]}`)
		}
		b.WriteString(`]}`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(b.String()))
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// childrenJob is the job of the child figures: orders keyed by id, their
// line items in order_line_items keyed by (orders_id, id).
func childrenJob(apiURL string, size int, target, schema string) string {
	table := "orders"
	if schema != "" {
		table = schema + ".orders"
	}
	return fmt.Sprintf(`name: bench-children
source:
  url: %s/orders
  records: data
pagination:
  style: page
  size_param: per_page
  size: %d
target:
  url: %s
  table: %s
  key: [id]
  columns:
    id: {path: id, type: integer}
    name: name
    total: {path: total, type: numeric}
    updated_at: {path: updated_at, type: timestamp}
  children:
    line_items:
      path: line_items
      table: order_line_items
      key: id
      columns:
        id: {path: id, type: integer}
        sku: sku
        quantity: {path: quantity, type: integer}
        price: {path: price, type: numeric}
`, apiURL, size, target, table)
}

// getOrders fetches one page of the child figures' API.
func getOrders(url string) ([]childOrder, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var page struct {
		Data []childOrder `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return nil, err
	}
	return page.Data, nil
}

// childrenLoaderSQLite flattens by hand: every page in one transaction, a
// prepared INSERT per order and per line item.
func childrenLoaderSQLite(apiURL string, pages, size int, path string) error {
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT, total TEXT, updated_at TEXT);
CREATE TABLE order_line_items (orders_id INTEGER NOT NULL, id INTEGER NOT NULL, sku TEXT, quantity INTEGER, price TEXT, PRIMARY KEY (orders_id, id))`); err != nil {
		return err
	}
	for p := 1; p <= pages; p++ {
		orders, err := getOrders(fmt.Sprintf("%s/orders?page=%d&per_page=%d", apiURL, p, size))
		if err != nil {
			return err
		}
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		po, err := tx.Prepare(`INSERT INTO orders VALUES (?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		pl, err := tx.Prepare(`INSERT INTO order_line_items VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		for _, o := range orders {
			if _, err := po.Exec(o.ID, o.Name, o.Total.String(), o.UpdatedAt.UTC().Format(time.RFC3339Nano)); err != nil {
				return err
			}
			for _, l := range o.LineItems {
				if _, err := pl.Exec(o.ID, l.ID, l.SKU, l.Quantity, l.Price.String()); err != nil {
					return err
				}
			}
		}
		po.Close()
		pl.Close()
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// childrenLoaderPostgres flattens by hand into PostgreSQL: every page in
// one transaction, a COPY of its orders and one of their line items.
func childrenLoaderPostgres(apiURL string, pages, size int, pgURL string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS bench_copy_lines, bench_copy_orders;
CREATE TABLE bench_copy_orders (id bigint PRIMARY KEY, name text, total numeric, updated_at timestamptz);
CREATE TABLE bench_copy_lines (orders_id bigint NOT NULL, id bigint NOT NULL, sku text, quantity bigint, price numeric, PRIMARY KEY (orders_id, id))`); err != nil {
		return err
	}
	for p := 1; p <= pages; p++ {
		orders, err := getOrders(fmt.Sprintf("%s/orders?page=%d&per_page=%d", apiURL, p, size))
		if err != nil {
			return err
		}
		var ors, lrs [][]any
		for _, o := range orders {
			ors = append(ors, []any{o.ID, o.Name, o.Total.String(), o.UpdatedAt})
			for _, l := range o.LineItems {
				lrs = append(lrs, []any{o.ID, l.ID, l.SKU, l.Quantity, l.Price.String()})
			}
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"bench_copy_orders"}, []string{"id", "name", "total", "updated_at"}, pgx.CopyFromRows(ors)); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"bench_copy_lines"}, []string{"orders_id", "id", "sku", "quantity", "price"}, pgx.CopyFromRows(lrs)); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
	}
	return nil
}

// childrenOnly builds the binary and prints the child figures, on SQLite
// and, with pgURL, PostgreSQL.
func childrenOnly(pgURL string, orders, size, repeat int) error {
	b, done, err := newBench()
	if err != nil {
		return err
	}
	defer done()
	apiURL, stop, err := serveOrders(orders)
	if err != nil {
		return err
	}
	defer stop()
	api := &fakeapi.Server{URL: apiURL}
	pages := (orders + size - 1) / size
	if err := b.childFigures("sqlite", api, "", orders, pages, size, repeat); err != nil {
		return err
	}
	if pgURL != "" {
		return b.childFigures("postgres", api, pgURL, orders, pages, size, repeat)
	}
	return nil
}

// childFigures measures one database: the loader and idemsync's first
// load interleaved, median of repeat; then an unchanged re-sync of the
// last first load, and the child rows it wrote, read from the table.
func (b *bench) childFigures(kind string, api *fakeapi.Server, pgURL string, orders, pages, size, repeat int) error {
	rows := orders * (1 + linesPerOrder)
	fmt.Printf("\n## child tables (%s): %d orders × %d line items = %d rows, pages of %d orders, no latency (median of %d runs; load average %s)\n",
		kind, orders, linesPerOrder, rows, size, repeat, loadAverage())
	var bases, firsts []measured
	var target, schema string
	for i := range repeat {
		to := filepath.Join(b.dir, fmt.Sprintf("children-loader-%d.db", i))
		if kind == "postgres" {
			to = pgURL
		}
		base, err := loader("children-"+kind, api, pages, size, to)
		if err != nil {
			return err
		}
		target = "sqlite:" + filepath.Join(b.dir, fmt.Sprintf("children-%d.db", i))
		if kind == "postgres" {
			target, schema = pgURL, fmt.Sprintf("bench_children_%d", i)
			if err := pgExec(pgURL, fmt.Sprintf(`DROP SCHEMA IF EXISTS %[1]s CASCADE; CREATE SCHEMA %[1]s`, schema)); err != nil {
				return err
			}
		}
		first, err := b.idemsync(fmt.Sprintf("children-%s-first-%d", kind, i), childrenJob(api.URL, size, target, schema))
		if err != nil {
			return err
		}
		bases, firsts = append(bases, base), append(firsts, first)
	}
	// The unchanged re-sync of the last first load (its state is the
	// first load's: same run name).
	db, table, err := childDB(kind, target, schema)
	if err != nil {
		return err
	}
	defer db.Close()
	var count0 int64
	var synced0 any
	if err := db.QueryRow(`SELECT count(*), max(_idemsync_synced_at) FROM `+table).Scan(&count0, &synced0); err != nil {
		return err
	}
	again, err := b.idemsync(fmt.Sprintf("children-%s-first-%d", kind, repeat-1), childrenJob(api.URL, size, target, schema))
	if err != nil {
		return err
	}
	var count1, rewritten int64
	if err := db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE _idemsync_synced_at > `+placeholder(kind)+`) FROM `+table, synced0).Scan(&count1, &rewritten); err != nil {
		return err
	}
	base, first := median(bases), median(firsts)
	tableRows := func(name string, m measured) {
		fmt.Printf("  %-52s %7.2f s %9.0f rows/s %7.2f CPU µs/row\n", name, m.wall.Seconds(), float64(rows)/m.wall.Seconds(), float64(m.cpu.Microseconds())/float64(rows))
	}
	loaderName := "loader (by hand: prepared INSERT per row, tx per page)"
	if kind == "postgres" {
		loaderName = "loader (by hand: COPY of both tables, tx per page)"
	}
	tableRows(loaderName, base)
	tableRows("idemsync first load, target.children", first)
	tableRows("idemsync unchanged re-sync", again)
	fmt.Printf("ratio: first load %.2fx the loader's rows/s (goal >= 0.8), CPU per row %.2fx the loader's\n",
		base.wall.Seconds()/first.wall.Seconds(), medianCPU(firsts).Seconds()/medianCPU(bases).Seconds())
	fmt.Printf("unchanged re-sync: %d child rows written (read from order_line_items: synced_at later than before, goal 0), %d → %d rows, %d parent rows written\n",
		rewritten+max(count1-count0, count0-count1), count0, count1, again.written)
	return b.growingResync(kind, api, target, schema, orders, size)
}

// growingResync measures a re-sync whose child table starts small and
// grows by much in the run while its parents change, so that every page
// deletes its parents' child rows (docs/performance.md, "Child tables"):
// a first load of 1% of the orders, then a run listing all of them, the
// first 1% changed, into the tables of the last first load's target,
// emptied.
func (b *bench) growingResync(kind string, api *fakeapi.Server, target, schema string, orders, size int) error {
	db, table, err := childDB(kind, target, schema)
	if err != nil {
		return err
	}
	defer db.Close()
	parent := strings.TrimSuffix(table, "order_line_items") + "orders"
	for _, t := range []string{table, parent} {
		if _, err := db.Exec(`DELETE FROM ` + t); err != nil {
			return err
		}
	}
	defer ordersListed.Store(0)
	defer ordersEdition.Store(0)
	ordersListed.Store(int64(max(orders/100, 1)))
	name := "children-" + kind + "-grow"
	if _, err := b.idemsync(name, childrenJob(api.URL, size, target, schema)); err != nil {
		return err
	}
	ordersListed.Store(0)
	ordersEdition.Store(1)
	m, err := b.idemsync(name, childrenJob(api.URL, size, target, schema))
	if err != nil {
		return err
	}
	rows := orders * (1 + linesPerOrder)
	fmt.Printf("growing re-sync: %d orders listed after a first load of %d, all written with their line items: %.2f s, %.0f rows/s, %.2f CPU µs/row (load average %s)\n",
		orders, max(orders/100, 1), m.wall.Seconds(), float64(rows)/m.wall.Seconds(), float64(m.cpu.Microseconds())/float64(rows), loadAverage())
	return nil
}

// childDB opens the idemsync target of the child figures and names its
// child table.
func childDB(kind, target, schema string) (*sql.DB, string, error) {
	if kind == "postgres" {
		db, err := sql.Open("pgx", target)
		return db, schema + ".order_line_items", err
	}
	db, err := sql.Open("sqlite", strings.TrimPrefix(target, "sqlite:"))
	return db, "order_line_items", err
}

func placeholder(kind string) string {
	if kind == "postgres" {
		return "$1"
	}
	return "?"
}

// pgExec runs statements on the PostgreSQL server.
func pgExec(pgURL, q string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, q)
	return err
}

// loadAverage is the host's 1, 5 and 15 minute load averages, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
