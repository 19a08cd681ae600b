package sqlkit

import (
	"math/big"
	"strconv"
	"testing"
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
		if IsDecimal(s) != ok {
			t.Fatalf("%q: IsDecimal %t, ParseDecimal %t", s, !ok, ok)
		}
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
