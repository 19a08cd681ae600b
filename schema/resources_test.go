package schema

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/jobfile"
)

const resourcesSpec = `
name: shop
defaults:
  source: {base_url: "https://api.example.com/v1", records: data}
  target: {url: "sqlite:out/shop.db"}
resources:
  - name: orders
    source: {path: /orders}
    target: {table: orders, key: [id], columns: {id: {path: id, type: integer}}}
  - name: order_items
    parent: orders
    parent_rows: changed
    fanout_concurrency: 2
    source: {path: "/orders/{parent.id}/items"}
    target:
      table: order_items
      key: [order_id, id]
      columns: {order_id: {parent: id}, id: id}
`

// A file with resources: validates as the loader reads it; the schema and
// the loader refuse the same mistakes.
func TestResourcesSchema(t *testing.T) {
	s := compile(t)
	for _, tt := range []struct {
		name, from, to string
		valid          bool
	}{
		{"as written", "", "", true},
		{"bad parent_rows", "parent_rows: changed", "parent_rows: some", false},
		{"zero fan-out", "fanout_concurrency: 2", "fanout_concurrency: 0", false},
		{"unknown resource key", "parent_rows: changed", "parent_row: changed", false},
		{"resource without name", "  - name: orders\n", "  - retry: {attempts: 2}\n", false},
		{"top-level source too", "defaults:", "source: {url: \"https://x\"}\ndefaults:", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := strings.Replace(resourcesSpec, tt.from, tt.to, 1)
			serr := validateYAML(t, s, []byte(spec))
			_, lerr := jobfile.LoadResources([]byte(spec), "/jobs/shop.yaml", noEnv)
			if (serr == nil) != tt.valid {
				t.Errorf("schema: valid=%v, want %v (%v)", serr == nil, tt.valid, serr)
			}
			if (lerr == nil) != tt.valid {
				t.Errorf("loader: valid=%v, want %v (%v)", lerr == nil, tt.valid, lerr)
			}
		})
	}
}
