package jobfile

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

const childrenSpec = validSpec + `  children:
    line_items:
      path: line_items
      table: order_line_items
      key: id
      columns:
        id: {path: id, type: integer}
        sku: sku
      children:
        taxes:
          path: tax_lines
          table: order_line_taxes
          columns:
            rate: {path: rate, type: numeric}
    labels:
      path: labels
      table: order_labels
      columns:
        name: "@this"
`

// target.children becomes the table's child tables, each keyed by its
// parent's key columns (named after the parent table) and the element's
// key or position, nested as written.
func TestLoadChildren(t *testing.T) {
	job, err := Load([]byte(childrenSpec), "/jobs/orders.yaml", env(map[string]string{"API_TOKEN": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	ch := job.Table.Children
	if len(ch) != 2 || ch[0].Name != "line_items" || ch[1].Name != "labels" {
		t.Fatalf("children: %+v", ch)
	}
	li := ch[0].Table
	if !reflect.DeepEqual(li.Key, []string{"orders_id", "id"}) || li.Columns[0].Type != contract.TypeInteger || !reflect.DeepEqual(ch[0].Root, []string{"orders_id"}) {
		t.Fatalf("line_items: key %v, columns %+v, root %v", li.Key, li.Columns, ch[0].Root)
	}
	tax := li.Children[0]
	if !reflect.DeepEqual(tax.Table.Key, []string{"orders_id", "order_line_items_id", contract.ColPos}) || !reflect.DeepEqual(tax.Root, []string{"orders_id"}) || tax.Path != "tax_lines" {
		t.Fatalf("taxes: key %v, root %v", tax.Table.Key, tax.Root)
	}
	if lb := ch[1].Table; !reflect.DeepEqual(lb.Key, []string{"orders_id", contract.ColPos}) || lb.Columns[2].Path != "@this" || !lb.Create {
		t.Fatalf("labels: %+v", lb)
	}
}

// A bad child is reported with its key and line, with every other problem.
func TestChildrenProblems(t *testing.T) {
	for name, tc := range map[string]struct{ edit, key, line string }{
		"no path":          {`      path: line_items` + "\n", "target.children.line_items.path", "line 22"},
		"unknown key":      {`      key: id`, "target.children.line_items.keys", "line 25"},
		"key not a column": {`      key: id`, "target.children.line_items.key", "line 25"},
		"same table":       {`          table: order_line_taxes`, "target.children.labels.table", "line 37"},
		"reserved name":    {`        sku: sku`, "target.children.line_items.columns._idemsync_x", "line 28"},
	} {
		t.Run(name, func(t *testing.T) {
			spec := childrenSpec
			switch name {
			case "no path":
				spec = strings.Replace(spec, tc.edit, "", 1)
			case "unknown key":
				spec = strings.Replace(spec, tc.edit, "      keys: id", 1)
			case "key not a column":
				spec = strings.Replace(spec, tc.edit, "      key: sku_id", 1)
			case "same table":
				spec = strings.Replace(spec, tc.edit, "          table: order_labels", 1)
			case "reserved name":
				spec = strings.Replace(spec, tc.edit, "        _idemsync_x: sku", 1)
			}
			p := loadProblems(t, spec)
			if !mentions(p, tc.key) || !slices.ContainsFunc(p, func(s string) bool { return strings.HasPrefix(s, tc.line+": ") && strings.Contains(s, tc.key) }) {
				t.Fatalf("problems %q, want %s: %s", p, tc.line, tc.key)
			}
		})
	}
	if p := loadProblems(t, childrenSpec+"  version: id\n"); !mentions(p, "target.children") {
		t.Fatalf("children with version: %q", p)
	}
}

// A child table whose name and key make, in its own child table, the
// column name a root key column already has there (shop.order_id and
// shop_order.id both become taxes.shop_order_id) is refused as the file is
// loaded, naming the table to rename (shop_order); it was valid, and the run failed
// with "column mapped twice".
func TestChildKeyNamesCollide(t *testing.T) {
	spec := strings.NewReplacer("table: orders\n", "table: shop\n", "key: [id]\n", "key: [order_id]\n", "    id: {path: id, type: integer}\n    email:", "    order_id: {path: order_id, type: integer}\n    email:").Replace(validSpec) + `  children:
    lines:
      path: lines
      table: shop_order
      key: id
      columns:
        id: {path: id, type: integer}
      children:
        taxes:
          path: taxes
          table: taxes
          columns:
            v: "@this"
`
	if !strings.Contains(spec, "key: [order_id]") || !strings.Contains(spec, "table: shop\n") {
		t.Fatalf("the spec was not edited:\n%s", spec)
	}
	p := loadProblems(t, spec)
	if !mentions(p, "target.children.lines.table") || !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, "shop_order_id") }) {
		t.Fatalf("problems %q, want target.children.lines.table naming shop_order_id", p)
	}
	if p := loadProblems(t, strings.Replace(spec, "table: shop_order\n", "table: shop_lines\n", 1)); len(p) != 0 {
		t.Fatalf("with the child table renamed: problems %q", p)
	}
}
