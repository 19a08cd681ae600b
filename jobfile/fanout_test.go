package jobfile

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

const fanSpec = `
name: shop
defaults:
  source: {base_url: "https://api.example.com/v1"}
  target: {url: "sqlite:shop.db"}
resources:
  - name: orders
    source: {path: /orders, records: data}
    pagination: {style: page, size: 100, size_param: per_page}
    target:
      table: orders
      key: [id]
      columns: {id: {path: id, type: integer}, code: code, placed: {path: placed, type: timestamp}}
  - name: order_items
    parent: orders
    parent_rows: all
    fanout_concurrency: 4
    source:
      path: "/orders/{parent.id}/items"
      query: {code: "{parent.code}"}
      headers: {X-Order: "{parent.code}"}
    pagination: {style: page, size: 100, size_param: per_page}
    target:
      table: order_items
      key: [order_id, id]
      columns: {order_id: {parent: id}, placed: {parent: placed, type: text}, id: id, qty: {path: qty, type: integer}}
`

func TestLoadChildResource(t *testing.T) {
	rs, err := LoadResources([]byte(fanSpec), "/jobs/shop.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	o, c := rs[0].Job, rs[1].Job
	if o.Parent != nil {
		t.Errorf("orders has a parent: %+v", o.Parent)
	}
	p := c.Parent
	if p == nil || p.Resource != "orders" || p.Name != "shop.orders" || p.Rows != idsync.ParentRowsAll || p.Concurrency != 4 ||
		p.URL != o.Target.URL || p.Table.Name != "orders" || len(p.Table.Columns) != 3 {
		t.Fatalf("parent = %+v", p)
	}
	if c.Source.URL != "https://api.example.com/v1/orders/{parent.id}/items" {
		t.Errorf("child url = %q", c.Source.URL)
	}
	want := []contract.Column{{Name: "order_id", Type: contract.TypeInteger, Parent: "id"}, {Name: "placed", Type: contract.TypeText, Parent: "placed"},
		{Name: "id", Path: "id", Type: contract.TypeText}, {Name: "qty", Path: "qty", Type: contract.TypeInteger}}
	for i, w := range want {
		if got := c.Table.Columns[i]; got != w {
			t.Errorf("column %d = %+v, want %+v", i, got, w)
		}
	}
}

func TestLoadChildDefaults(t *testing.T) {
	spec := strings.Replace(strings.Replace(fanSpec, "    parent_rows: all\n", "", 1), "    fanout_concurrency: 4\n", "", 1)
	rs, err := LoadResources([]byte(spec), "/jobs/shop.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p := rs[1].Job.Parent; p.Rows != idsync.ParentRowsChanged || p.Concurrency != 1 {
		t.Errorf("parent = %+v; want rows changed, concurrency 1", p)
	}
}

func TestLoadChildProblems(t *testing.T) {
	child := func(keys, src, cols string) string {
		return `
name: shop
defaults: {target: {url: "sqlite:shop.db"}}
resources:
  - name: orders
    source: {url: "https://x/orders"}
    target: {table: orders, key: [id], columns: {id: {path: id, type: integer}}}
  - name: items
` + keys + `
    source: ` + src + `
    target: {table: items, key: [order_id, id], columns: ` + cols + `}
`
	}
	okKeys, okSrc, okCols := "    parent: orders", `{url: "https://x/orders/{parent.id}/items"}`, `{order_id: {parent: id}, id: id}`
	cases := map[string]struct{ spec, want string }{
		"unknown parent":  {child("    parent: nope", okSrc, okCols), `line 9: resource items: parent: "nope" is not an earlier resource of the file (orders)`},
		"later parent":    {strings.Replace(child(okKeys, okSrc, okCols), "  - name: orders", "  - name: orders\n    parent: items", 1), `resource orders: parent: "items" is not an earlier resource`},
		"own parent":      {child("    parent: items", okSrc, okCols), `"items" is not an earlier resource`},
		"parent_rows":     {child(okKeys+"\n    parent_rows: some", okSrc, okCols), `parent_rows: "some" is not one of changed, all`},
		"concurrency":     {child(okKeys+"\n    fanout_concurrency: 0", okSrc, okCols), `fanout_concurrency: 0: want a whole number of at least 1`},
		"keys no parent":  {child("    parent_rows: all", okSrc, okCols), `parent_rows and fanout_concurrency: only with parent`},
		"ref not child":   {child("", okSrc, `{order_id: order_id, id: id}`), `source: {parent.id} is only used in a resource with a parent`},
		"col not child":   {child("", `{url: "https://x/i"}`, okCols), `target.columns.order_id: {parent: id} is only used in a resource with a parent`},
		"unknown column":  {child(okKeys, `{url: "https://x/orders/{parent.nope}/items"}`, okCols), `source: {parent.nope}: the parent's table orders has no column nope`},
		"unknown col col": {child(okKeys, okSrc, `{order_id: {parent: nope}, id: id}`), `target.columns.order_id: {parent: nope}: the parent's table orders has no column nope`},
		"parent and path": {child(okKeys, okSrc, `{order_id: {parent: id, path: x}, id: id}`), `target.columns.order_id: give either path or parent`},
		"incremental": {child(okKeys+"\n    incremental: {field: u, param: since}", okSrc, okCols),
			`incremental: a child resource is walked whole for each parent: parent_rows: changed keeps it incremental`},
		"other database": {strings.Replace(child(okKeys, okSrc, okCols), "    target: {table: items", "    target: {url: \"sqlite:other.db\", table: items", 1),
			`target.url: a child resource writes to its parent's database`},
		"body not JSON": {child(okKeys, `{url: "https://x/i", method: POST, body: "id={parent.id}"}`, okCols), `source.body: {parent.COL} is only used in a JSON body`},
		"body key":      {child(okKeys, `{url: "https://x/i", method: POST, body: {"{parent.id}": 1}}`, okCols), `source.body: {parent.COL} is only used in the string values`},
		"in defaults":   {strings.Replace(child(okKeys, okSrc, okCols), "defaults: {", "defaults: {parent: orders, ", 1), `defaults: parent belongs to a resource`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadResources([]byte(c.spec), "/jobs/shop.yaml", env(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want it to contain %q", err, c.want)
			}
		})
	}
}

// A v1 file has no parent: {parent.COL} and {parent: COL} are refused.
func TestLoadV1RefusesParentRefs(t *testing.T) {
	spec := "name: a\nsource: {url: 'https://x/{parent.id}'}\ntarget: {url: 'sqlite:x.db', table: a, key: [id]}\n"
	if _, err := Load([]byte(spec), "/jobs/a.yaml", env(nil)); err == nil || !strings.Contains(err.Error(), "only used in a resource with a parent") {
		t.Fatalf("err = %v", err)
	}
}
