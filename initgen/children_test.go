package initgen

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
)

// Arrays of objects on the first page are proposed as child tables: keyed
// by an id unique among the elements, else by position; an array of
// scalars stays a json column. The file loads, with the children.
func TestInitProposesChildTables(t *testing.T) {
	body := `{"orders":[
	  {"id":1,"line_items":[{"id":11,"sku":"a","quantity":2},{"id":12,"sku":"b","quantity":1}],"tax_lines":[{"title":"VAT","rate":0.2}],"tags":["x"]},
	  {"id":2,"line_items":[{"id":13,"sku":"a","quantity":5}],"tax_lines":[{"title":"VAT","rate":0.2}],"tags":[]}]}`
	spec, sum := buildFrom(t, "https://x/orders.json", body, nil)
	job, err := jobfile.Load([]byte(spec), "/jobs/orders.yaml", anyVar)
	if err != nil {
		t.Fatalf("%v\n%s", err, spec)
	}
	ch := job.Table.Children
	if len(ch) != 2 {
		t.Fatalf("%d child tables, want line_items and tax_lines\n%s", len(ch), spec)
	}
	if ch[0].Path != "line_items" || !reflect.DeepEqual(ch[0].Table.Key, []string{"things_id", "id"}) {
		t.Errorf("line_items: path %s, key %v", ch[0].Path, ch[0].Table.Key)
	}
	if ch[1].Path != "tax_lines" || !reflect.DeepEqual(ch[1].Table.Key, []string{"things_id", contract.ColPos}) {
		t.Errorf("tax_lines: path %s, key %v (the title repeats: position)", ch[1].Path, ch[1].Table.Key)
	}
	if c := ch[0].Table.Column("quantity"); c == nil || c.Type != contract.TypeInteger {
		t.Errorf("line_items.quantity: %+v", c)
	}
	if !strings.Contains(sum["children"].(string), "line_items → things_line_items") {
		t.Errorf("summary: %v", sum["children"])
	}
}
