package sync

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
)

// A value an inferred column cannot take widens it along the lattice
// (docs/job-file.md, "Without columns"); rows the widening did not change
// keep their content hash, and a value of another JSON type that the
// widened column stores the same way does not.
func TestInferPageWidens(t *testing.T) {
	tbl := &contract.Table{Key: []string{"id"}}
	m := Mapper{Table: tbl, Infer: true}
	page1 := []gjson.Result{gjson.Parse(`{"id":1,"qty":5,"flag":true,"price":0}`), gjson.Parse(`{"id":2,"qty":6,"flag":false,"price":79.19}`)}
	if !m.InferPage(page1) {
		t.Fatal("first page inferred nothing")
	}
	want := map[string]contract.ColumnType{"id": contract.TypeInteger, "qty": contract.TypeInteger, "flag": contract.TypeBoolean, "price": contract.TypeNumeric}
	for _, c := range tbl.Columns {
		if c.Type != want[c.Name] || c.Was != "" {
			t.Errorf("page 1: column %+v, want type %s", c, want[c.Name])
		}
	}
	before, err := m.Map(0, page1[0])
	if err != nil {
		t.Fatal(err)
	}

	if m.InferPage(page1) {
		t.Error("the same page again changed the columns")
	}
	page3 := []gjson.Result{gjson.Parse(`{"id":3,"qty":2.5,"flag":"yes"}`)}
	if !m.InferPage(page3) {
		t.Fatal("page 3 widened nothing")
	}
	want = map[string]contract.ColumnType{"id": contract.TypeInteger, "qty": contract.TypeNumeric, "flag": contract.TypeText, "price": contract.TypeNumeric}
	was := map[string]contract.ColumnType{"qty": contract.TypeInteger, "flag": contract.TypeBoolean}
	for _, c := range tbl.Columns {
		if c.Type != want[c.Name] || c.Was != was[c.Name] {
			t.Errorf("page 3: column %+v, want type %s was %q", c, want[c.Name], was[c.Name])
		}
	}
	if _, err := m.Map(0, gjson.Parse(`{"id":"x"}`)); err == nil {
		t.Error("a key value the key column cannot take is not a bad record")
	}
	after, err := m.Map(0, page1[0])
	if err != nil {
		t.Fatal(err)
	}
	if after.Hash != before.Hash {
		t.Errorf("an unchanged record's hash changed with the widening: %s → %s", before.Hash, after.Hash)
	}
	if after.Values[1] != "5" || after.Values[2] != "true" {
		t.Errorf("widened values %#v, want \"5\" and \"true\"", after.Values)
	}
	// "5" and "true" are stored as 5 and true are, but are other source
	// values: a change from one to the other is a change.
	str, err := m.Map(0, gjson.Parse(`{"id":1,"qty":"5","flag":"true","price":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if str.Hash == before.Hash {
		t.Error("strings hash as the numbers and booleans they replaced")
	}
	// A second widening keeps the first type.
	if !m.InferPage([]gjson.Result{gjson.Parse(`{"id":3,"qty":{"n":1}}`)}) || tbl.Column("qty").Type != contract.TypeJSON || tbl.Column("qty").Was != contract.TypeInteger {
		t.Errorf("qty after an object: %+v, want json widened from integer", *tbl.Column("qty"))
	}
}

// A record that is bad for its key types nothing: it is a dead letter or
// fails its page, and must not widen the table it is kept out of.
func TestInferPageIgnoresBadKeys(t *testing.T) {
	tbl := &contract.Table{Key: []string{"id"}}
	m := Mapper{Table: tbl, Infer: true}
	m.InferPage([]gjson.Result{gjson.Parse(`{"id":1,"qty":5}`), gjson.Parse(`{"qty":"x","extra":1}`), gjson.Parse(`{"id":null,"qty":"y"}`)})
	if c := tbl.Column("qty"); c == nil || c.Type != contract.TypeInteger || tbl.Column("extra") != nil {
		t.Fatalf("columns %+v: a record without a key typed the table", tbl.Columns)
	}
	if m.InferPage([]gjson.Result{gjson.Parse(`{"id":"k2","qty":2.5}`), gjson.Parse(`[1]`)}) {
		t.Errorf("columns %+v: a record whose key its column cannot take widened the table", tbl.Columns)
	}
}
