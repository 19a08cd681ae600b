package postgres_test

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/postgres"
)

func TestPostgresCheckRow(t *testing.T) {
	tbl := &contract.Table{Name: "t", Key: []string{"id"}, Columns: []contract.Column{
		{Name: "id", Type: contract.TypeText}, {Name: "doc", Type: contract.TypeJSON}, {Name: "n", Type: contract.TypeInteger}}}
	for _, tc := range []struct {
		name   string
		values []any
		column string // "" when the row fits
		reason string
	}{
		{"plain", []any{"a", `{"a":1}`, int64(1)}, "", ""},
		{"escaped backslash then u0000", []any{"a", `{"a":"\\u0000"}`, nil}, "", ""},
		{"backslash pair then escape", []any{"a", `{"a":"\\\u0000"}`, nil}, "doc", `\u0000`},
		{"json NUL escape", []any{"a", `["\u0000"]`, nil}, "doc", `\u0000`},
		{"json upper-case escape is another character", []any{"a", `["\u000A"]`, nil}, "", ""},
		{"text NUL", []any{"a\x00b", nil, nil}, "id", "NUL"},
		{"invalid utf-8", []any{"a\xffb", nil, nil}, "id", "UTF-8"},
		{"key at the bound", []any{strings.Repeat("k", 2600), nil, nil}, "", ""},
		{"key past the bound", []any{strings.Repeat("k", 2601), nil, nil}, "id", "2601 bytes"},
		{"short row (columns inferred later)", []any{"a"}, "", ""},
	} {
		err := (&postgres.Sink{}).CheckRow(tbl, contract.Row{Values: tc.values})
		if tc.column == "" {
			if err != nil {
				t.Errorf("%s: %v, want nil", tc.name, err)
			}
			continue
		}
		bad, ok := err.(*contract.BadRecord)
		if !ok || bad.Column != tc.column || !strings.Contains(bad.Reason, tc.reason) {
			t.Errorf("%s: %v, want a bad record naming column %s and %q", tc.name, err, tc.column, tc.reason)
		}
	}
}

// CheckRow follows a table's columns as they change between pages (an
// inferred column added or widened: the same table, other checks), and
// tables checked in turn.
func TestPostgresCheckRowFollowsColumns(t *testing.T) {
	s := &postgres.Sink{}
	tbl := &contract.Table{Name: "t", Key: []string{"id"}, Columns: []contract.Column{
		{Name: "id", Type: contract.TypeInteger}, {Name: "doc", Type: contract.TypeText}}}
	nulEscape := contract.Row{Values: []any{int64(1), `["\u0000"]`}}
	if err := s.CheckRow(tbl, nulEscape); err != nil {
		t.Fatalf("text holding the six characters \\u0000: %v, want nil", err)
	}
	tbl.Columns[1].Type = contract.TypeJSON // widened in place
	if err := s.CheckRow(tbl, nulEscape); err == nil {
		t.Errorf("json holding the escape \\u0000 after the column became json: nil, want a bad record")
	}
	other := &contract.Table{Name: "u", Key: []string{"doc"}, Columns: []contract.Column{
		{Name: "id", Type: contract.TypeInteger}, {Name: "doc", Type: contract.TypeText}}}
	if err := s.CheckRow(other, nulEscape); err != nil {
		t.Errorf("another table, doc text: %v, want nil", err)
	}
	long := contract.Row{Values: []any{int64(1), strings.Repeat("k", 2601)}}
	if err := s.CheckRow(other, long); err == nil {
		t.Errorf("another table keyed by doc, a key of 2601 bytes: nil, want a bad record")
	}
	if err := s.CheckRow(tbl, nulEscape); err == nil {
		t.Errorf("back to the first table, doc json holding the escape \\u0000: nil, want a bad record")
	}
	tbl.Columns = append(tbl.Columns, contract.Column{Name: "note", Type: contract.TypeText}) // a column added
	if err := s.CheckRow(tbl, contract.Row{Values: []any{int64(1), nil, "a\x00b"}}); err == nil {
		t.Errorf("a NUL in the added text column: nil, want a bad record")
	}
}
