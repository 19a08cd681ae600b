package sync

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
)

// The one-pass read of a record's columns gives what one gjson.Get per
// column gives: first occurrence of a duplicated key, nested paths, keys
// written with escapes, patterns and array queries (read by gjson), and
// records that are not objects, one plan reading records whose keys come
// in different orders.
func TestFieldPlanMatchesGet(t *testing.T) {
	paths := []string{"id", "name", "customer.email", "customer.address.city", "customer", "tags", "tags.0", "tags.#",
		"missing", "missing.deep", "a-b", "$x", "0", "na*e", `we\.ird`, "items.#.sku", "@this", "id|name"}
	var cols []contract.Column
	for _, p := range paths {
		cols = append(cols, contract.Column{Name: p, Path: p, Type: contract.TypeJSON})
	}
	tbl := &contract.Table{Columns: cols}
	recs := []string{
		`{"id": 1, "name": "a", "customer": {"email": "e@x", "address": {"city": "c"}}, "tags": ["x", "y"]}`,
		`{"id": 1, "id": 2, "customer": {"email": "first"}, "customer": {"email": "second"}}`,
		`{"\u0069d": 7, "n\u0061me": "esc", "a-b": true, "$x": null, "0": "zero", "we.ird": 3}`,
		`{"items": [{"sku": 1}, {"sku": 2}], "name": "late", "id": "s"}`,
		`["id", "name"]`, `[{"id": 1}]`, `42`, `"s"`, `null`, `{}`,
		`{"customer": "not an object", "tags": {"0": "obj"}}`,
		// Keys in one order, then another, a subset after a full record
		// (no value of the record before may be left), and other keys
		// between them: read looks for the next key where the previous
		// record had it.
		`{"id": 1, "name": "a", "customer": {"email": "e1"}, "tags": [1]}`,
		`{"id": 2, "name": "b", "customer": {"email": "e2"}, "tags": [2]}`,
		`{"tags": [3], "customer": {"email": "e3"}, "name": "c", "id": 3}`,
		`{"name": "only"}`,
		`{"x": 0, "id": 4, "y": 1, "name": "d", "id": 5, "tags": null}`,
		`{"id": 6, "name": "e", "customer": {"email": "e6"}, "tags": [6]}`,
	}
	m := &Mapper{Table: tbl}
	m.plan = newFieldPlan(tbl)
	for _, r := range recs {
		rec := gjson.Parse(r)
		got := m.plan.read(rec, cols)
		for i, p := range paths {
			want := rec.Get(p)
			if got[i].Raw != want.Raw || got[i].Type != want.Type || got[i].Str != want.Str || got[i].Num != want.Num {
				t.Errorf("record %s, path %q: %q (%v), gjson.Get gives %q (%v)", r, p, got[i].Raw, got[i].Type, want.Raw, want.Type)
			}
		}
	}
}
