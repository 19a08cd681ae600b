package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// startShop serves a fake two-level API for the test's lifetime.
func startShop(t *testing.T, opts fakeapi.ShopOptions) (*fakeapi.Shop, string) {
	t.Helper()
	s := fakeapi.NewShop(opts)
	return s, serve(t, s)
}

// shopJob describes a job file over the fake shop (docs/job-file.md, "Parent →
// child fan-out").
type shopJob struct {
	api, target string
	schema      string // PostgreSQL: the tables' schema; "" for SQLite
	customers   bool   // a customers resource first
	noItems     bool   // no order_items resource
	parentStyle string // orders: page (default) or cursor
	childStyle  string // order_items: page (default) or cursor
	parentSize  int    // orders per page; default 7
	childSize   int    // items per page; default 4
	parentRows  string // "" (the default, changed), changed or all
	fanout      int    // fanout_concurrency; 0 leaves it out
	onBad       string // order_items' on_bad_record; "" leaves it out
	incremental bool   // orders incremental on updated_at
	overlap     string // incremental.overlap; "" leaves it out
	deletes     string // order_items' target.deletes; "" leaves it out
	childHeader string // order_items' source.headers (a YAML mapping); "" leaves it out
	// parentDeletes is orders' target.deletes; "" leaves it out.
	parentDeletes string
}

// table is the name of a table in the job's schema.
func (j shopJob) table(name string) string {
	if j.schema != "" {
		return j.schema + "." + name
	}
	return name
}

// pagination is a pagination block of style over the shop's routes.
func shopPagination(style string, size int) string {
	if style == "cursor" {
		return fmt.Sprintf("{style: cursor, next: meta.next_cursor, size_param: limit, size: %d}", size)
	}
	return fmt.Sprintf("{style: page, size_param: per_page, size: %d}", size)
}

// yaml returns the job file.
func (j shopJob) yaml() string {
	if j.parentSize == 0 {
		j.parentSize = 7
	}
	if j.childSize == 0 {
		j.childSize = 4
	}
	var b strings.Builder
	fmt.Fprintf(&b, `name: shop
defaults:
  source: {base_url: %q, records: data, timeout: 5s}
  retry: {attempts: 3, min_wait: 5ms, max_wait: 50ms}
  target: {url: %q}
resources:
`, j.api, j.target)
	if j.customers {
		fmt.Fprintf(&b, `  - name: customers
    source: {path: /customers}
    pagination: {style: page, size_param: per_page, size: 4}
    target:
      table: %s
      key: [id]
      columns: {id: {path: id, type: integer}, name: {path: name, type: text}, email: {path: email, type: text}, updated_at: {path: updated_at, type: text}}
`, j.table("customers"))
	}
	fmt.Fprintf(&b, `  - name: orders
    source: {path: /orders}
    pagination: %s
`, shopPagination(j.parentStyle, j.parentSize))
	if j.incremental {
		overlap := ""
		if j.overlap != "" {
			overlap = ", overlap: " + j.overlap
		}
		fmt.Fprintf(&b, "    incremental: {field: updated_at, param: updated_since, initial: \"2020-01-01T00:00:00Z\"%s}\n", overlap)
	}
	fmt.Fprintf(&b, `    target:
      table: %s
      key: [id]
`, j.table("orders"))
	if j.parentDeletes != "" {
		fmt.Fprintf(&b, "      deletes: %s\n", j.parentDeletes)
	}
	b.WriteString("      columns: {id: {path: id, type: integer}, customer_id: {path: customer_id, type: integer}, status: {path: status, type: text}, updated_at: {path: updated_at, type: text}}\n")
	if !j.noItems {
		b.WriteString(j.itemsYAML())
	}
	return b.String()
}

// childPagination is order_items' pagination block. A child that sweeps
// reads the shop's has_more on page walks: a parent whose children fill
// their last page ends on an empty page, which alone proves no end for a
// sweep (docs/deletions.md).
func (j shopJob) childPagination() string {
	p := shopPagination(j.childStyle, j.childSize)
	if j.deletes != "" && j.childStyle != "cursor" {
		p = strings.TrimSuffix(p, "}") + ", has_more: meta.has_more}"
	}
	return p
}

// itemsYAML is the order_items resource.
func (j shopJob) itemsYAML() string {
	var b strings.Builder
	b.WriteString("  - name: order_items\n    parent: orders\n")
	if j.parentRows != "" {
		fmt.Fprintf(&b, "    parent_rows: %s\n", j.parentRows)
	}
	if j.fanout > 0 {
		fmt.Fprintf(&b, "    fanout_concurrency: %d\n", j.fanout)
	}
	headers := ""
	if j.childHeader != "" {
		headers = ", headers: " + j.childHeader
	}
	fmt.Fprintf(&b, `    source: {path: "/orders/{parent.id}/items"%s}
    pagination: %s
    target:
      table: %s
      key: [order_id, id]
`, headers, j.childPagination(), j.table("order_items"))
	if j.onBad != "" {
		fmt.Fprintf(&b, "      on_bad_record: %s\n", j.onBad)
	}
	if j.deletes != "" {
		fmt.Fprintf(&b, "      deletes: %s\n", j.deletes)
	}
	b.WriteString("      columns: {order_id: {parent: id}, id: {path: id, type: integer}, sku: {path: sku, type: text}, qty: {path: qty, type: integer}, updated_at: {path: updated_at, type: text}}\n")
	return b.String()
}

// shopTarget is where a test's job writes: a SQLite file in its folder or
// a schema of its own on the PostgreSQL test server.
type shopTarget struct {
	name   string // sqlite or postgres
	url    string // the job's target.url
	schema string // "" for SQLite
	db     func(t *testing.T, dir string) (query func(q string) ([][]string, error), done func())
}

// shopTargets returns SQLite and, when IDEMSYNC_TEST_POSTGRES_URL is set,
// PostgreSQL; run the test body once for each.
func forEachTarget(t *testing.T, body func(t *testing.T, tgt shopTarget)) {
	t.Run("sqlite", func(t *testing.T) { body(t, sqliteTarget()) })
	t.Run("postgres", func(t *testing.T) { body(t, postgresTarget(t, postgresURL(t))) })
}

func sqliteTarget() shopTarget {
	return shopTarget{name: "sqlite", url: "sqlite:out.db", db: func(t *testing.T, dir string) (func(string) ([][]string, error), func()) {
		t.Helper()
		path := filepath.Join(dir, "out.db")
		if _, err := os.Stat(path); err != nil {
			return func(string) ([][]string, error) { return nil, nil }, func() {}
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		return func(q string) ([][]string, error) { return sqlRows(db, q) }, func() { db.Close() }
	}}
}

func postgresTarget(t *testing.T, url string) shopTarget {
	schema := freshSchema(t, url)
	return shopTarget{name: "postgres", url: url, schema: schema, db: func(t *testing.T, _ string) (func(string) ([][]string, error), func()) {
		t.Helper()
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		q := func(q string) ([][]string, error) {
			rows, err := conn.Query(ctx, q)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out [][]string
			for rows.Next() {
				vals, err := rows.Values()
				if err != nil {
					return nil, err
				}
				r := make([]string, len(vals))
				for i, v := range vals {
					r[i] = fmt.Sprint(v)
				}
				out = append(out, r)
			}
			return out, rows.Err()
		}
		return q, func() { conn.Close(ctx) }
	}}
}

// sqlRows runs q and returns every row as text; a missing table is empty.
func sqlRows(db *sql.DB, q string) ([][]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		r := make([]string, len(cols))
		for i, v := range vals {
			r[i] = v.String
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// shopTable is a table read back: "key" → "values", keys and values joined
// with '|'.
type shopTable map[string]string

// read returns table (in the target's schema) with its first keys columns
// as the key, failing on a duplicate key; a missing table is empty.
func (tgt shopTarget) read(t *testing.T, dir, table string, keys int, cols ...string) shopTable {
	t.Helper()
	if tgt.schema != "" {
		table = tgt.schema + "." + table
	}
	query, done := tgt.db(t, dir)
	defer done()
	casts := make([]string, len(cols))
	for i, c := range cols {
		casts[i] = "CAST(" + c + " AS TEXT)"
	}
	rows, err := query("SELECT " + strings.Join(casts, ", ") + " FROM " + table)
	if err != nil {
		if s := err.Error(); strings.Contains(s, "no such table") || strings.Contains(s, "does not exist") {
			return shopTable{}
		}
		t.Fatalf("read %s: %v", table, err)
	}
	out := shopTable{}
	for _, r := range rows {
		k, v := strings.Join(r[:keys], "|"), strings.Join(r[keys:], "|")
		if _, dup := out[k]; dup {
			t.Fatalf("duplicate key %s in %s", k, table)
		}
		out[k] = v
	}
	return out
}

// The columns the tests read back, key columns first.
var (
	ordersCols    = []string{"id", "customer_id", "status", "updated_at"}
	itemsCols     = []string{"order_id", "id", "sku", "qty", "updated_at"}
	customersCols = []string{"id", "name", "email", "updated_at"}
)

func stamp(at time.Time) string { return at.UTC().Format(time.RFC3339Nano) }

// wantOrders is the orders table the shop's parents make.
func wantOrders(ps []fakeapi.ShopParent) shopTable {
	out := shopTable{}
	for _, p := range ps {
		out[strconv.Itoa(p.ID)] = fmt.Sprintf("%d|%s|%s", p.CustomerID, p.Status, stamp(p.UpdatedAt))
	}
	return out
}

// wantOrderItems is the order_items table the children make.
func wantOrderItems(cs []fakeapi.ShopChild) shopTable {
	out := shopTable{}
	for _, c := range cs {
		out[fmt.Sprintf("%d|%d", c.ParentID, c.ID)] = fmt.Sprintf("%s|%d|%s", c.SKU, c.Qty, stamp(c.UpdatedAt))
	}
	return out
}

// wantCustomers is the customers table.
func wantCustomers(cs []fakeapi.ShopCustomer) shopTable {
	out := shopTable{}
	for _, c := range cs {
		out[strconv.Itoa(c.ID)] = fmt.Sprintf("%s|%s|%s", c.Name, c.Email, stamp(c.UpdatedAt))
	}
	return out
}

// diffTables describes how got differs from want ("" when equal).
func diffTables(got, want shopTable) string {
	var missing, extra, stale []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			missing = append(missing, k)
		} else if g != w {
			stale = append(stale, fmt.Sprintf("%s: %s, want %s", k, g, w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra)+len(stale) == 0 {
		return ""
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(stale)
	first := func(s []string) []string { return s[:min(3, len(s))] }
	return fmt.Sprintf("%d missing %v, %d extra %v, %d stale %v (of %d)",
		len(missing), first(missing), len(extra), first(extra), len(stale), first(stale), len(want))
}

// assertShop fails unless the orders and order_items tables (and customers,
// when withCustomers) equal the shop's data.
func assertShop(t *testing.T, tgt shopTarget, dir string, s *fakeapi.Shop, withCustomers bool) {
	t.Helper()
	if d := diffTables(tgt.read(t, dir, "orders", 1, ordersCols...), wantOrders(s.Parents())); d != "" {
		t.Errorf("orders differ from the source: %s", d)
	}
	if d := diffTables(tgt.read(t, dir, "order_items", 2, itemsCols...), wantOrderItems(s.AllChildren())); d != "" {
		t.Errorf("order_items differ from the source: %s", d)
	}
	if withCustomers {
		if d := diffTables(tgt.read(t, dir, "customers", 1, customersCols...), wantCustomers(s.Customers())); d != "" {
			t.Errorf("customers differ from the source: %s", d)
		}
	}
}
