package jobfile

import (
	"strings"
	"testing"
)

// target.changes in a file with several resources: one feed named after
// the file, each fed resource stamping its own name on its events; a
// resource can turn it off; changes_rows without changes is refused.
func TestChangesPerResource(t *testing.T) {
	spec := strings.Replace(shopSpec, `target: {url: "sqlite:out/shop.db", on_bad_record: skip}`,
		`target: {url: "sqlite:out/shop.db", on_bad_record: skip, changes: true, changes_rows: true}`, 1)
	spec = strings.Replace(spec, "target: {table: customers, key: [id]}", "target: {table: customers, key: [id], changes: false, changes_rows: false}", 1)
	rs, err := LoadResources([]byte(spec), "/jobs/shop.yaml", env(map[string]string{"SHOP_TOKEN": "t"}))
	if err != nil {
		t.Fatal(err)
	}
	if c := rs[0].Job.Table.Changes; c == nil || c.Job != "shop" || c.Resource != "orders" || !c.Rows {
		t.Errorf("orders' feed: %+v, want job shop, resource orders, rows", c)
	}
	if c := rs[1].Job.Table.Changes; c != nil {
		t.Errorf("customers' feed: %+v, want none (changes: false)", c)
	}
	bad := strings.Replace(shopSpec, "target: {table: orders, key: [id]}", "target: {table: orders, key: [id], changes_rows: true}", 1)
	if _, err := LoadResources([]byte(bad), "/jobs/shop.yaml", env(map[string]string{"SHOP_TOKEN": "t"})); err == nil || !strings.Contains(err.Error(), "target.changes_rows") {
		t.Errorf("changes_rows without changes: %v", err)
	}
}
