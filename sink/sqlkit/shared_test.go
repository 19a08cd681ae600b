package sqlkit

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

func table(cols ...string) *contract.Table {
	t := &contract.Table{Name: "items", Key: []string{"id"}}
	for _, c := range cols {
		t.Columns = append(t.Columns, contract.Column{Name: c, Type: contract.TypeText})
	}
	return t
}

// CheckTable refuses, with an Invalid error naming the culprit, every
// table both sinks must not build SQL from.
func TestCheckTable(t *testing.T) {
	long := strings.Repeat("x", 64)
	for _, tc := range []struct {
		name string
		edit func(*contract.Table)
		want string // "" = accepted
	}{
		{"ok", func(*contract.Table) {}, ""},
		{"schema ok", func(t *contract.Table) { t.Schema = "s" }, ""},
		{"empty table", func(t *contract.Table) { t.Name = "" }, "empty table name"},
		{"NUL schema", func(t *contract.Table) { t.Schema = "a\x00b" }, "schema name"},
		{"bad UTF-8", func(t *contract.Table) { t.Name = "\xff" }, "not valid UTF-8"},
		{"too long", func(t *contract.Table) { t.Name = long }, "longer than 63 bytes"},
		{"no key", func(t *contract.Table) { t.Key = nil }, "no key columns"},
		{"twice", func(t *contract.Table) { t.Columns = append(t.Columns, t.Columns[0]) }, `column "id" mapped twice`},
		{"reserved", func(t *contract.Table) { t.Columns[1].Name = contract.ColHash }, "reserved for bookkeeping"},
		{"bad type", func(t *contract.Table) { t.Columns[1].Type = "money" }, `unknown type "money"`},
		{"key unmapped", func(t *contract.Table) { t.Key = []string{"nope"} }, `key column "nope"`},
		{"version unmapped", func(t *contract.Table) { t.Version = "v" }, `version column "v"`},
		{"column NUL", func(t *contract.Table) { t.Columns[1].Name = "a\x00" }, "column name"},
	} {
		tbl := table("id", "name")
		tc.edit(tbl)
		err := CheckTable(tbl, 63)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		case tc.want != "" && contract.ClassOf(err) != contract.Invalid:
			t.Errorf("%s: class %v, want Invalid", tc.name, contract.ClassOf(err))
		}
	}
	if err := CheckTableName(&contract.Table{Schema: "s", Name: "t"}, 0); err != nil {
		t.Errorf("CheckTableName: %v", err)
	}
	if err := CheckTableName(&contract.Table{Schema: "a\x00", Name: "t"}, 0); err == nil {
		t.Error("CheckTableName accepted a NUL in the schema")
	}
	if err := CheckTableName(&contract.Table{Name: long}, 63); err == nil {
		t.Error("CheckTableName accepted a 64-byte name with a 63-byte limit")
	}
}

func TestNamesAndLists(t *testing.T) {
	if got := QuoteTable(&contract.Table{Schema: `s"x`, Name: "t"}); got != `"s""x"."t"` {
		t.Errorf("QuoteTable = %s", got)
	}
	if got := QuoteList([]string{"a", `b"`}); got != `"a", "b"""` {
		t.Errorf("QuoteList = %s", got)
	}
	for _, tc := range []struct {
		a, b []string
		fold bool
		want bool
	}{
		{[]string{"a", "B"}, []string{"b", "A"}, true, true},
		{[]string{"a", "B"}, []string{"b", "A"}, false, false},
		{[]string{"a", "a"}, []string{"a", "b"}, false, false},
		{[]string{"a"}, []string{"a", "b"}, false, false},
		{[]string{"Ä"}, []string{"ä"}, true, false}, // ASCII only, as SQLite
	} {
		if got := SameSet(tc.a, tc.b, tc.fold); got != tc.want {
			t.Errorf("SameSet(%q, %q, %v) = %v", tc.a, tc.b, tc.fold, got)
		}
	}
	tbl := &contract.Table{Key: []string{"org", "id"}}
	if !IsKey(tbl, "id") || IsKey(tbl, "name") {
		t.Error("IsKey")
	}
	keep, sel := ReadColumns([]string{"id", contract.ColHash, "x y"}, "%s::text")
	if strings.Join(keep, ",") != "id,x y" || sel != `"id"::text, "x y"::text` {
		t.Errorf("ReadColumns = %q, %q", keep, sel)
	}
	err := MissingTable(&contract.Table{Name: "items"})
	var ce *contract.Error
	if !errors.As(err, &ce) || ce.Class != contract.Permanent || !strings.Contains(ce.Msg, "items") || ce.Hint == "" {
		t.Errorf("MissingTable = %#v", err)
	}
}

func TestScanText(t *testing.T) {
	a := "x"
	vals, err := ScanText(2, func(dest ...any) error {
		*dest[0].(**string) = &a
		return nil
	})
	if err != nil || len(vals) != 2 || *vals[0] != "x" || vals[1] != nil {
		t.Errorf("ScanText = %v, %v", vals, err)
	}
	boom := errors.New("boom")
	if _, err := ScanText(1, func(...any) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("ScanText error = %v", err)
	}
}

func TestValueHelpers(t *testing.T) {
	for _, v := range []any{int64(7), 7, int32(7)} {
		if n, ok := AsInt64(v); !ok || n != 7 {
			t.Errorf("AsInt64(%T) = %v, %v", v, n, ok)
		}
	}
	if _, ok := AsInt64("7"); ok {
		t.Error("AsInt64 took a string")
	}
	for _, v := range []any{1.5, float32(1.5)} {
		if f, ok := AsFloat64(v); !ok || f != 1.5 {
			t.Errorf("AsFloat64(%T) = %v, %v", v, f, ok)
		}
	}
	if f, ok := AsFloat64(3); !ok || f != 3 {
		t.Errorf("AsFloat64(int) = %v, %v", f, ok)
	}
	if _, ok := AsFloat64(true); ok {
		t.Error("AsFloat64 took a bool")
	}
	for _, v := range []any{`{"a": 1}`, []byte(`{"a": 1}`), json.RawMessage(`{"a": 1}`)} {
		if s, ok := AsJSON(v); !ok || s != `{"a": 1}` {
			t.Errorf("AsJSON(%T) = %q, %v", v, s, ok)
		}
		if s, ok := CompactJSON(v); !ok || s != `{"a":1}` {
			t.Errorf("CompactJSON(%T) = %q, %v", v, s, ok)
		}
	}
	if s, ok := CompactJSON(`[1,2]`); !ok || s != `[1,2]` {
		t.Errorf("CompactJSON of compact text = %q, %v", s, ok)
	}
	for _, v := range []any{`{"a":`, 42} {
		if _, ok := AsJSON(v); ok {
			t.Errorf("AsJSON(%#v) accepted", v)
		}
		if _, ok := CompactJSON(v); ok {
			t.Errorf("CompactJSON(%#v) accepted", v)
		}
	}
	if ToText("a") != "a" || ToText([]byte("b")) != "b" || ToText(12) != "12" {
		t.Error("ToText")
	}
	err := ValueError(&contract.Column{Name: "n", Type: contract.TypeInteger}, "x")
	if contract.ClassOf(err) != contract.Permanent || !strings.Contains(err.Error(), `column "n": cannot store string as integer`) {
		t.Errorf("ValueError = %v", err)
	}
	d, ok := ParseDecimal("12.50")
	if !ok || d.Rat().Cmp(big.NewRat(25, 2)) != 0 {
		t.Errorf("12.50 = %v", d)
	}
	if d, _ := ParseDecimal("3e2"); d.Rat().Cmp(big.NewRat(300, 1)) != 0 {
		t.Errorf("3e2 = %v", d.Rat())
	}
	if Exp10(-3).Int64() != 1000 || Exp10(0).Int64() != 1 {
		t.Error("Exp10")
	}
}
