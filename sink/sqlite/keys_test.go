package sqlite

import (
	"context"
	"database/sql"
	"math"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

func TestCanonicalDecimal(t *testing.T) {
	for in, want := range map[string]string{
		"1": "1", "1.00": "1", "1.0": "1", "1e0": "1", "1E3": "1000", "25e-1": "2.5", "-0.50": "-0.5",
		"-0": "0", "0.000": "0", "007": "7", "+5": "5", ".5": "0.5", "-.5": "-0.5", "1e-3": "0.001",
		"100": "100", "-100.10": "-100.1", "12345678901234567890.123456789": "12345678901234567890.123456789",
		"5.": "5", "0.10e1": "1",
	} {
		d, ok := sqlkit.ParseDecimal(in)
		if !ok {
			t.Fatalf("sqlkit.ParseDecimal(%q) failed", in)
		}
		if got := canonicalDecimal(d); got != want {
			t.Errorf("canonicalDecimal(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSQLiteKeyValue(t *testing.T) {
	for _, tc := range []struct {
		typ  contract.ColumnType
		aff  string
		in   any
		want any
	}{
		{contract.TypeText, affInteger, "1", int64(1)},
		{contract.TypeText, affInteger, " 12 ", int64(12)},
		{contract.TypeText, affInteger, "1.5", 1.5},
		{contract.TypeText, affInteger, "abc", "abc"},
		{contract.TypeNumeric, affInteger, "1e0", int64(1)},
		{contract.TypeReal, affInteger, 2.0, int64(2)},
		{contract.TypeNumeric, affNumeric, "3.00", int64(3)},
		{contract.TypeInteger, affReal, int64(3), 3.0},
		{contract.TypeText, affReal, "2.5", 2.5},
		{contract.TypeInteger, affText, int64(42), "42"},
		{contract.TypeNumeric, affText, "1.50", "1.5"},
		{contract.TypeNumeric, affBlob, "1.50", "1.5"},
		{contract.TypeText, affText, "1.50", "1.50"},
		{contract.TypeReal, affBlob, math.Copysign(0, -1), 0.0},
	} {
		if got := sqliteKeyValue(tc.typ, tc.aff, tc.in); got != tc.want {
			t.Errorf("sqliteKeyValue(%s, %s, %#v) = %#v, want %#v", tc.typ, tc.aff, tc.in, got, tc.want)
		}
	}
	for decl, want := range map[string]string{"INTEGER": affInteger, "bigint": affInteger, "VARCHAR(10)": affText,
		"": affBlob, "blob": affBlob, "DOUBLE PRECISION": affReal, "NUMERIC(10,2)": affNumeric, "DECIMAL": affNumeric} {
		if got := affinity(decl); got != want {
			t.Errorf("affinity(%q) = %s, want %s", decl, got, want)
		}
	}
}

// earlierKeyForms selects every numeric spelling that is not canonical
// and no canonical one, and every timestamp not in the fixed-width form.
func TestEarlierKeyForms(t *testing.T) {
	s, err := Open(context.Background(), ":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	match := func(typ contract.ColumnType, v string) bool {
		var m sql.NullBool
		q := "SELECT " + earlierKeyForms(typ, "k") + " FROM (SELECT ? AS k)"
		if err := s.DB().QueryRow(q, v).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m.Bool
	}
	for _, in := range []string{"1", "1.00", "1e0", "25e-1", "-0.50", "-0", "0.000", "007", "+5", ".5", "-.5", "5.",
		"-100.10", "0", "-7", "10", "0.001", "12345678901234567890.123456789", "1E+2"} {
		d, _ := sqlkit.ParseDecimal(in)
		canon := canonicalDecimal(d)
		if match(contract.TypeNumeric, canon) {
			t.Errorf("canonical %q selected as an earlier form", canon)
		}
		if in != canon && !match(contract.TypeNumeric, in) {
			t.Errorf("%q (canonical %q) not selected as an earlier form", in, canon)
		}
	}
	ts := time.Date(2024, 1, 1, 10, 0, 0, 500000000, time.UTC)
	if match(contract.TypeTimestamp, formatTime(ts)) || !match(contract.TypeTimestamp, ts.Format(time.RFC3339Nano)) ||
		!match(contract.TypeTimestamp, ts.Truncate(time.Second).Format(time.RFC3339Nano)) {
		t.Error("timestamp forms misjudged")
	}
}
