package sqlite

import (
	"testing"
	"time"

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
		if ct.decl == "" || ct.value == nil || ct.order == nil {
			t.Errorf("column type %s: entry %+v lacks decl, value or order", typ, ct)
		}
		if (ct.keyText == nil) != (ct.earlier == "") {
			t.Errorf("column type %s: keyText and earlier must come together", typ)
		}
	}
}

// The version guard compares by the column type's order.
func TestVersionNewer(t *testing.T) {
	ts := &contract.Column{Name: "v", Type: contract.TypeTimestamp}
	num := &contract.Column{Name: "v", Type: contract.TypeNumeric}
	at := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339Nano, s); return tm }
	for _, tc := range []struct {
		c            *contract.Column
		next, stored any
		want         bool
	}{
		{ts, at("2024-01-01T00:00:01Z"), "2024-01-01T00:00:00.5Z", true}, // text order would say older
		{ts, at("2024-01-01T00:00:00Z"), "2024-01-01T00:00:00.5Z", false},
		{ts, at("2024-01-01T00:00:00.5Z"), "2024-01-01T00:00:00.5Z", true},
		{ts, nil, "2024-01-01T00:00:00Z", false},
		{ts, at("2000-01-01T00:00:00Z"), nil, true},
		{num, "10.0", "9.99", true},
		{num, "9.99", "10", false},
		{&contract.Column{Name: "v", Type: contract.TypeInteger}, int64(2), int64(10), false},
		{&contract.Column{Name: "v", Type: contract.TypeBoolean}, true, int64(0), true},
	} {
		got, err := versionNewer(tc.c, typeOf(tc.c.Type).order, tc.next, tc.stored)
		if err != nil || got != tc.want {
			t.Errorf("versionNewer(%s, %v, %v) = %v, %v; want %v", tc.c.Type, tc.next, tc.stored, got, err, tc.want)
		}
	}
}
