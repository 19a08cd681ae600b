package sync

import (
	"errors"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
)

// childTable is orders(id, name) with lines keyed by id, each with its
// discounts keyed by position, as jobfile builds it from target.children.
func childTable() *contract.Table {
	return &contract.Table{Name: "orders", Key: []string{"id"}, Columns: []contract.Column{
		{Name: "id", Path: "id", Type: contract.TypeInteger}, {Name: "name", Path: "name", Type: contract.TypeText},
	}, Children: []contract.Child{{Name: "lines", Path: "lines", Root: []string{"orders_id"}, Table: contract.Table{
		Name: "order_lines", Key: []string{"orders_id", "id"}, Columns: []contract.Column{
			{Name: "orders_id", Type: contract.TypeInteger}, {Name: "id", Path: "id", Type: contract.TypeInteger}, {Name: "qty", Path: "qty", Type: contract.TypeInteger},
		},
		Children: []contract.Child{{Name: "discounts", Path: "discounts", Root: []string{"orders_id"}, Table: contract.Table{
			Name: "order_line_discounts", Key: []string{"orders_id", "order_lines_id", contract.ColPos}, Columns: []contract.Column{
				{Name: "orders_id", Type: contract.TypeInteger}, {Name: "order_lines_id", Type: contract.TypeInteger},
				{Name: contract.ColPos, Type: contract.TypeInteger}, {Name: "code", Path: "@this", Type: contract.TypeText},
			}}}},
	}}}}
}

// A record's arrays become child rows carrying the parent's key (and,
// below, the line's), elements without a key their position.
func TestMapChildren(t *testing.T) {
	m := &Mapper{Table: childTable()}
	row, err := m.Map(0, gjson.Parse(`{"id": 7, "name": "a", "lines": [{"id": 3, "qty": 2, "discounts": ["x", "y"]}, {"id": 4, "qty": 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	lines := row.Children[0]
	if len(lines) != 2 || !reflect.DeepEqual(lines[0].Values, []any{int64(7), int64(3), int64(2)}) || !reflect.DeepEqual(lines[1].Values, []any{int64(7), int64(4), int64(1)}) {
		t.Fatalf("lines: %+v", lines)
	}
	disc := lines[0].Children[0]
	if len(disc) != 2 || !reflect.DeepEqual(disc[1].Values, []any{int64(7), int64(3), int64(1), "y"}) {
		t.Fatalf("discounts of line 3: %+v", disc)
	}
	if len(lines[1].Children[0]) != 0 {
		t.Fatalf("line 4 has no discounts, got %+v", lines[1].Children[0])
	}
}

// The parent's hash covers its arrays at every depth, order included: a
// parent whose columns are equal but whose arrays differ is changed (its
// children are rewritten), an identical one is not.
func TestChildrenInParentHash(t *testing.T) {
	m := &Mapper{Table: childTable()}
	hash := func(rec string) string {
		t.Helper()
		row, err := m.Map(0, gjson.Parse(rec))
		if err != nil {
			t.Fatal(err)
		}
		return row.Hash
	}
	base := `{"id": 1, "name": "a", "lines": [{"id": 3, "qty": 2, "discounts": ["x"]}, {"id": 4, "qty": 1}]}`
	if first, again := hash(base), hash(base); first != again {
		t.Fatal("the same record hashes differently")
	}
	for name, rec := range map[string]string{
		"reordered":         `{"id": 1, "name": "a", "lines": [{"id": 4, "qty": 1}, {"id": 3, "qty": 2, "discounts": ["x"]}]}`,
		"shrunk":            `{"id": 1, "name": "a", "lines": [{"id": 3, "qty": 2, "discounts": ["x"]}]}`,
		"element changed":   `{"id": 1, "name": "a", "lines": [{"id": 3, "qty": 5, "discounts": ["x"]}, {"id": 4, "qty": 1}]}`,
		"grandchild grown":  `{"id": 1, "name": "a", "lines": [{"id": 3, "qty": 2, "discounts": ["x", "z"]}, {"id": 4, "qty": 1}]}`,
		"no lines":          `{"id": 1, "name": "a"}`,
		"lines moved apart": `{"id": 1, "name": "a", "lines": [{"id": 3, "qty": 2}, {"id": 4, "qty": 1, "discounts": ["x"]}]}`,
	} {
		if hash(rec) == hash(base) {
			t.Errorf("%s: the parent's hash did not change", name)
		}
	}
	// A table without children hashes as before: its mapped values only.
	plain := &Mapper{Table: &contract.Table{Name: "orders", Key: []string{"id"}, Columns: childTable().Columns}}
	row, err := plain.Map(0, gjson.Parse(base))
	if err != nil || row.Children != nil || row.Hash != plain.hash([]any{int64(1), "a"}) {
		t.Fatalf("without children: %+v, %v", row, err)
	}
}

// A value at the array's path that is not an array, or an element whose
// key is missing or does not convert, makes the record bad, naming the
// element.
func TestChildBadRecords(t *testing.T) {
	m := &Mapper{Table: childTable()}
	for rec, column := range map[string]string{
		`{"id": 1, "lines": "none"}`:                  "lines",
		`{"id": 1, "lines": [{"id": 3}, {"qty": 2}]}`: "lines[1].id",
		`{"id": 1, "lines": [{"id": "x"}]}`:           "lines[0].id",
	} {
		_, err := m.Map(5, gjson.Parse(rec))
		var bad *contract.BadRecord
		if !errors.As(err, &bad) || bad.Column != column || bad.Index != 5 {
			t.Errorf("%s: %v, want a bad record naming %s", rec, err, column)
		}
	}
}

// refuseBad is a target that cannot store the text "bad".
type refuseBad struct{}

func (refuseBad) CheckRow(t *contract.Table, r contract.Row) error {
	for i, v := range r.Values {
		if v == "bad" {
			return &contract.BadRecord{Column: t.Columns[i].Name, Reason: "refused"}
		}
	}
	return nil
}

// A value the target would refuse in a child row, at any depth, makes the
// parent's record bad, naming the child table, column and element.
func TestCheckChildRows(t *testing.T) {
	m := &Mapper{Table: childTable()}
	for rec, want := range map[string]string{
		`{"id": 7, "lines": [{"id": 3, "discounts": ["ok", "bad"]}]}`: "order_line_discounts.code (orders_id=7, order_lines_id=3, _idemsync_pos=1)",
		`{"id": 7, "name": "bad"}`:                                    "name",
		`{"id": 7, "lines": [{"id": 3, "discounts": ["ok"]}]}`:        "",
	} {
		row, err := m.Map(0, gjson.Parse(rec))
		if err != nil {
			t.Fatal(err)
		}
		err = checkRow(refuseBad{}, m.Table, row, 4)
		var bad *contract.BadRecord
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want nil", rec, err)
		case want != "" && (!errors.As(err, &bad) || bad.Column != want || bad.Index != 4 || bad.Key != "id=7"):
			t.Errorf("%s: %+v, want a bad record of column %s", rec, err, want)
		}
	}
}

// An element's columns are read as gjson.Get reads them: the first of a
// key met twice, a dotted path into a nested object, a gjson pattern, a
// missing column as null, a scalar element by @this.
func TestElementColumnsAsGet(t *testing.T) {
	tbl := childTable()
	lines := &tbl.Children[0].Table
	lines.Columns = append(lines.Columns,
		contract.Column{Name: "sku", Path: "item.sku", Type: contract.TypeText},
		contract.Column{Name: "tag", Path: "tags.#", Type: contract.TypeInteger},
		contract.Column{Name: "note", Path: "note", Type: contract.TypeText})
	m := &Mapper{Table: tbl}
	row, err := m.Map(0, gjson.Parse(`{"id": 1, "lines": [{"qty": 2, "id": 3, "qty": 9, "item": {"sku": "s-1"}, "tags": [1, 2], "discounts": ["x"]}, {"id": 4, "item": {"sku": "s-2"}, "qty": 1, "discounts": "y"}]}`))
	if err == nil {
		t.Fatalf("a discounts value that is not an array was mapped: %+v", row)
	}
	row, err = m.Map(0, gjson.Parse(`{"id": 1, "lines": [{"qty": 2, "id": 3, "qty": 9, "item": {"sku": "s-1"}, "tags": [1, 2], "discounts": ["x"]}, {"id": 4, "item": {"sku": "s-2"}, "qty": 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{int64(1), int64(3), int64(2), "s-1", int64(2), nil}, {int64(1), int64(4), int64(1), "s-2", nil, nil}}
	for i, w := range want {
		if got := row.Children[0][i].Values; !reflect.DeepEqual(got, w) {
			t.Errorf("line %d = %#v, want %#v", i, got, w)
		}
	}
	if got := row.Children[0][0].Children[0][0].Values; !reflect.DeepEqual(got, []any{int64(1), int64(3), int64(0), "x"}) {
		t.Errorf("discount = %#v", got)
	}
}

// BenchmarkMapChildren maps an order with 5 line items (bench -children's
// record).
func BenchmarkMapChildren(b *testing.B) {
	tbl := &contract.Table{Name: "orders", Key: []string{"id"}, Columns: []contract.Column{
		{Name: "id", Path: "id", Type: contract.TypeInteger}, {Name: "name", Path: "name", Type: contract.TypeText},
		{Name: "total", Path: "total", Type: contract.TypeNumeric}, {Name: "updated_at", Path: "updated_at", Type: contract.TypeTimestamp},
	}, Children: []contract.Child{{Name: "line_items", Path: "line_items", Root: []string{"orders_id"}, Table: contract.Table{
		Name: "order_line_items", Key: []string{"orders_id", "id"}, Columns: []contract.Column{
			{Name: "orders_id", Type: contract.TypeInteger}, {Name: "id", Path: "id", Type: contract.TypeInteger},
			{Name: "sku", Path: "sku", Type: contract.TypeText}, {Name: "quantity", Path: "quantity", Type: contract.TypeInteger},
			{Name: "price", Path: "price", Type: contract.TypeNumeric},
		}}}}}
	rec := gjson.Parse(`{"id":12345,"name":"Order 12345","total":826.45,"updated_at":"2024-01-01T03:25:45Z","line_items":[` +
		`{"id":123450,"sku":"sku-45","quantity":7,"price":415.00},{"id":123451,"sku":"sku-46","quantity":8,"price":422.11},` +
		`{"id":123452,"sku":"sku-47","quantity":9,"price":429.22},{"id":123453,"sku":"sku-48","quantity":1,"price":436.33},` +
		`{"id":123454,"sku":"sku-49","quantity":2,"price":443.44}]}`)
	m := &Mapper{Table: tbl}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Map(0, rec); err != nil {
			b.Fatal(err)
		}
	}
}
