package e2e

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// writeShopTables writes the shop's orders and items into a SQLite file
// in dir, as a correct sync would leave them, skipping the items for
// which drop returns true.
func writeShopTables(t *testing.T, dir string, snap fakeapi.ShopSnapshot, drop func(fakeapi.ShopChild) bool) *sql.DB {
	t.Helper()
	db := openSQLite(t, filepath.Join(dir, "out.db"))
	for _, q := range []string{
		`CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, status TEXT, updated_at TEXT)`,
		`CREATE TABLE order_items (order_id INTEGER, id INTEGER, sku TEXT, qty INTEGER, updated_at TEXT, PRIMARY KEY (order_id, id))`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range snap.Parents {
		if _, err := db.Exec(`INSERT INTO orders VALUES (?, ?, ?, ?)`, p.ID, p.CustomerID, p.Status, stamp(p.UpdatedAt)); err != nil {
			t.Fatal(err)
		}
		for _, c := range snap.Children[p.ID] {
			if drop != nil && drop(c) {
				continue
			}
			if _, err := db.Exec(`INSERT INTO order_items VALUES (?, ?, ?, ?, ?)`, c.ParentID, c.ID, c.SKU, c.Qty, stamp(c.UpdatedAt)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return db
}

// The fan-out model's invariant check finds what it must (a missing,
// stale or extra item, an order the source lacks) and claims nothing for
// an order that changed while the run was under way.
func TestFanoutHolesFindsHoles(t *testing.T) {
	shop := fakeapi.NewShop(fakeapi.ShopOptions{Parents: 8, MaxChildren: 5, Seed: 3})
	start := shop.Snapshot()
	dir := t.TempDir()
	victim := shop.Children(2)[1]
	db := writeShopTables(t, dir, start, func(c fakeapi.ShopChild) bool { return c.ID == victim.ID })
	tgt := sqliteTarget()

	bad := fanoutHoles(t, tgt, dir, start, start, nil)
	if len(bad) != 1 || !strings.Contains(bad[0], "items of order 2") || !strings.Contains(bad[0], "1 missing") {
		t.Errorf("a missing item: %v", bad)
	}
	if d := diffTables(tgt.read(t, dir, "order_items", 2, itemsCols...), wantOrderItems(shop.AllChildren())); !strings.Contains(d, "1 missing") {
		t.Errorf("diffTables of a missing item: %q", d)
	}

	// Order 2 changes during the run: no claim about it any more.
	shop.AddChildren(2, 1)
	if bad := fanoutHoles(t, tgt, dir, start, shop.Snapshot(), nil); len(bad) != 0 {
		t.Errorf("claims about an order that changed during the run: %v", bad)
	}

	// A stale item, an extra item, and an order the source does not hold.
	if len(shop.Children(3)) == 0 {
		t.Fatal("order 3 has no items: pick another seed for this test")
	}
	mustExec(t, db, `UPDATE order_items SET qty = qty + 1 WHERE order_id = 3 AND id = (SELECT min(id) FROM order_items WHERE order_id = 3)`)
	mustExec(t, db, `INSERT INTO order_items VALUES (4, 999, 'X', 1, 'x')`)
	mustExec(t, db, `INSERT INTO orders VALUES (99, 1, 'open', 'x')`)
	bad = fanoutHoles(t, tgt, dir, start, shop.Snapshot(), nil)
	joined := strings.Join(bad, "\n")
	for _, want := range []string{"items of order 3: 0 missing [], 0 extra [], 1 stale", "items of order 4: 0 missing [], 1 extra", "order 99 not in the source"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no %q in %v", want, bad)
		}
	}
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// fanoutStatus reads only a multi-resource object's status.
func TestFanoutStatusReadsTheJobObject(t *testing.T) {
	for in, want := range map[string]string{
		`{"job":"shop","status":"completed","exit_code":0,"duration_ms":1,"resources":[{"resource":"orders","status":"completed"}]}`: "completed",
		`{"job":"shop","status":"partial","exit_code":0,"duration_ms":1,"resources":[]}`:                                             "partial",
		`{"job":"orders","status":"completed","run_id":1}`:                                                                           "",
		``: "",
	} {
		if got := fanoutStatus(in); got != want {
			t.Errorf("fanoutStatus(%s) = %q, want %q", in, got, want)
		}
	}
}
