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

// formatTime writes what the layout does, for every instant: years of
// four digits by hand, any other by the layout itself.
func TestFormatTimeMatchesLayout(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	for _, tm := range []time.Time{
		testTime, {}, time.Unix(0, 0), time.Unix(0, 1).In(east),
		time.Date(2024, 2, 29, 23, 59, 59, 999999999, east),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(999, 12, 31, 23, 0, 0, 10, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, east).Add(12 * time.Hour),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, want := formatTime(tm), tm.UTC().Format(sqliteTimeLayout); got != want {
			t.Errorf("formatTime(%v) = %q, want %q", tm, got, want)
		}
	}
}

func FuzzFormatTime(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Add(testTime.Unix(), int64(testTime.Nanosecond()))
	f.Add(int64(253402300799), int64(999999999)) // 9999-12-31T23:59:59
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		tm := time.Unix(sec, nsec)
		if got, want := formatTime(tm), tm.UTC().Format(sqliteTimeLayout); got != want {
			t.Errorf("formatTime(%d, %d) = %q, want %q", sec, nsec, got, want)
		}
	})
}

// BenchmarkFormatTime: formatTime against the layout's formatting.
func BenchmarkFormatTime(b *testing.B) {
	b.Run("formatTime", func(b *testing.B) {
		for b.Loop() {
			formatTime(testTime)
		}
	})
	b.Run("layout", func(b *testing.B) {
		for b.Loop() {
			_ = testTime.UTC().Format(sqliteTimeLayout)
		}
	})
}
