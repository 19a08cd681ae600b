package postgres

import (
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// Every column type has an entry in the table, with what each entry needs.
func TestColumnTypesComplete(t *testing.T) {
	for _, typ := range contract.ColumnTypes {
		ct, ok := columnTypes[typ]
		if !ok {
			t.Errorf("column type %s has no entry in columnTypes", typ)
			continue
		}
		if ct.decl == "" || ct.value == nil || ct.wire == nil || (ct.binary != "") != (ct.array != nil) {
			t.Errorf("column type %s: entry lacks decl, value or wire, or has binary without array", typ)
		}
	}
}

// Keys PostgreSQL holds equal are one key: the last row wins.
func TestCanonicalKeys(t *testing.T) {
	tbl := &contract.Table{Name: "t", Key: []string{"k"}, Columns: []contract.Column{
		{Name: "k", Type: contract.TypeNumeric}, {Name: "v", Type: contract.TypeText}}}
	rows := []contract.Row{{Values: []any{"1.0", "a"}}, {Values: []any{"2", "b"}}, {Values: []any{"1", "c"}}}
	kept, dropped := canonicalKeys(tbl, rows, keyForm)
	if dropped != 1 || len(kept) != 2 || kept[0].Values[1] != "b" || kept[1].Values[1] != "c" {
		t.Fatalf("canonicalKeys = %v, %d; want [2 b] [1 c], 1 dropped", kept, dropped)
	}
}
