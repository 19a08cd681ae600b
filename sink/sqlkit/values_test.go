package sqlkit

import (
	"math/big"
	"strconv"
	"testing"
	"time"

	idsync "github.com/idemsync/idemsync/sync"
)

func TestParseDecimal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		int  string
		exp  int32
		fail bool
	}{
		{in: "12.50", int: "1250", exp: -2},
		{in: "12345678901234567890.123456789", int: "12345678901234567890123456789", exp: -9},
		{in: "-0.001", int: "-1", exp: -3},
		{in: "100", int: "100", exp: 0},
		{in: "1e3", int: "1", exp: 3},
		{in: "1.5E-2", int: "15", exp: -3},
		{in: "+7", int: "7", exp: 0},
		{in: ".5", int: "5", exp: -1},
		{in: "5.", int: "5", exp: 0},
		{in: "", fail: true},
		{in: ".", fail: true},
		{in: "1.2.3", fail: true},
		{in: "NaN", fail: true},
		{in: "1e", fail: true},
		{in: "--1", fail: true},
		{in: "0x10", fail: true},
	} {
		d, ok := ParseDecimal(tc.in)
		if ok == tc.fail {
			t.Errorf("ParseDecimal(%q) ok = %v", tc.in, ok)
			continue
		}
		if ok && (d.Int.String() != tc.int || d.Exp != tc.exp) {
			t.Errorf("ParseDecimal(%q) = %s e%d, want %s e%d", tc.in, d.Int, d.Exp, tc.int, tc.exp)
		}
	}
}

func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"12.50", "-1e-3", "1.", "", "9999999999999999999999.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseDecimal(s)
		if !ok {
			return
		}
		// The same value written as digits and exponent parses back equal.
		again, ok := ParseDecimal(d.Int.String() + "e" + strconv.Itoa(int(d.Exp)))
		if !ok || again.Rat().Cmp(d.Rat()) != 0 {
			t.Fatalf("%q: %s e%d does not parse back (%v)", s, d.Int, d.Exp, ok)
		}
		// Where math/big also reads s, it reads the same value.
		if r, ok := new(big.Rat).SetString(s); ok && r.Cmp(d.Rat()) != 0 {
			t.Fatalf("%q: parsed %s, math/big says %s", s, d.Rat().RatString(), r.RatString())
		}
	})
}

func TestVersionNewer(t *testing.T) {
	ts := &idsync.Column{Name: "v", Type: idsync.TypeTimestamp}
	num := &idsync.Column{Name: "v", Type: idsync.TypeNumeric}
	at := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339Nano, s); return tm }
	for _, tc := range []struct {
		c            *idsync.Column
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
		{&idsync.Column{Name: "v", Type: idsync.TypeInteger}, int64(2), int64(10), false},
		{&idsync.Column{Name: "v", Type: idsync.TypeBoolean}, true, int64(0), true},
	} {
		got, err := VersionNewer(tc.c, tc.next, tc.stored)
		if err != nil || got != tc.want {
			t.Errorf("VersionNewer(%s, %v, %v) = %v, %v; want %v", tc.c.Type, tc.next, tc.stored, got, err, tc.want)
		}
	}
}

func TestCanonicalKeys(t *testing.T) {
	tbl := &idsync.Table{Name: "t", Key: []string{"k"}, Columns: []idsync.Column{
		{Name: "k", Type: idsync.TypeNumeric}, {Name: "v", Type: idsync.TypeText}}}
	rows := []idsync.Row{{Values: []any{"1.0", "a"}}, {Values: []any{"2", "b"}}, {Values: []any{"1", "c"}}}
	kept, dropped := CanonicalKeys(tbl, rows)
	if dropped != 1 || len(kept) != 2 || kept[0].Values[1] != "b" || kept[1].Values[1] != "c" {
		t.Fatalf("CanonicalKeys = %v, %d; want [2 b] [1 c], 1 dropped", kept, dropped)
	}
}
