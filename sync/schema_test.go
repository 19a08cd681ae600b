package sync

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
)

// schemaEngine is an engine whose inferred table has id and an integer
// price, under the contract sc.
func schemaEngine(sc *spec.SchemaContract) (*Engine, *Mapper) {
	job := &Job{Infer: true, Secrets: NewRedactor(), Table: contract.Table{Name: "orders", Key: []string{"id"},
		Columns: []contract.Column{{Name: "id", Path: "id", Type: contract.TypeInteger}, {Name: "price", Path: "price", Type: contract.TypeInteger}}}}
	job.Target.Schema = sc
	return &Engine{Job: job}, &Mapper{Table: &job.Table, Infer: true}
}

// A record with both a new field and a value its column cannot take,
// under discard and discard_row, is dropped whole and counted once, as a
// row; under discard and discard_value it is kept, trimmed of both, and
// counted for each; the table gains no column and widens none.
func TestSchemaDiscardsCountOncePerRecord(t *testing.T) {
	recs := gjson.Parse(`[{"id":1,"price":5},{"id":2,"price":7.5,"tags":["a"]},{"id":3,"price":8,"tags":["b"]}]`).Array()
	for _, tc := range []struct {
		typeChange string
		want       contract.SchemaDiscards
		drop, trim []int
	}{
		{spec.TypeChangeDiscardRow, contract.SchemaDiscards{NewFields: 1, Rows: 1}, []int{1}, []int{2}},
		{spec.TypeChangeDiscardValue, contract.SchemaDiscards{NewFields: 2, Values: 1}, nil, []int{1, 2}},
	} {
		e, m := schemaEngine(&spec.SchemaContract{NewColumns: spec.NewColumnsDiscard, TypeChange: tc.typeChange})
		sp, err := e.inferPage(m, recs, "page 1")
		if err != nil {
			t.Fatal(err)
		}
		if sp.discards != tc.want || len(sp.drop) != len(tc.drop) || len(sp.trim) != len(tc.trim) || len(sp.changes) != 0 {
			t.Errorf("%s: discards %+v, drop %v, trim %v, changes %v; want %+v, drop %v, trim %v, no change",
				tc.typeChange, sp.discards, sp.drop, sp.trim, sp.changes, tc.want, tc.drop, tc.trim)
		}
		for _, i := range tc.drop {
			if !strings.Contains(sp.drop[i], "price (integer) cannot take a number 7.5") {
				t.Errorf("%s: drop reason %q", tc.typeChange, sp.drop[i])
			}
		}
		if why := sp.trim[2]; !strings.Contains(why, `new field(s) "tags" not stored`) {
			t.Errorf("%s: trim reason %q", tc.typeChange, why)
		}
		if len(e.Job.Table.Columns) != 2 || e.Job.Table.Columns[1].Type != contract.TypeInteger {
			t.Errorf("%s: columns %+v, want id and price as they were", tc.typeChange, e.Job.Table.Columns)
		}
		row, err := m.Map(1, recs[1])
		if tc.typeChange == spec.TypeChangeDiscardValue && (err != nil || row.Values[1] != nil) {
			t.Errorf("discard_value maps record 2 to %v, %v; want price NULL", row.Values, err)
		}
	}
}

// Under freeze the first page of a table still sets its columns; the next
// page's new field fails it, naming the field, the key and the line.
func TestSchemaFreezeAfterTheFirstPage(t *testing.T) {
	e, m := schemaEngine(&spec.SchemaContract{NewColumns: spec.NewColumnsFreeze, TypeChange: spec.TypeChangeWiden, NewColumnsLine: 9})
	e.Job.Table.Columns = nil
	sp, err := e.inferPage(m, gjson.Parse(`[{"id":1,"price":5}]`).Array(), "page 1")
	if err != nil || len(sp.changes) != 2 {
		t.Fatalf("first page: %+v, %v; want its two columns added", sp.changes, err)
	}
	_, err = e.inferPage(m, gjson.Parse(`[{"id":1,"price":5},{"id":7,"price":6,"note":"n"}]`).Array(), "page 2")
	if err == nil || contract.ClassOf(err) != contract.Permanent {
		t.Fatalf("second page: %v, want a permanent error", err)
	}
	for _, w := range []string{"page at page 2", "record 1", "key id=7", `field "note"`, "target.schema.new_columns (line 9)", "is freeze"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}
