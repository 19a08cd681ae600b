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
