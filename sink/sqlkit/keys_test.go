package sqlkit

import (
	"math"
	"reflect"
	"testing"
)

func TestEncodeKeyRoundTrips(t *testing.T) {
	for _, vals := range [][]any{
		{int64(1)}, {int64(-1 << 63)}, {math.MaxFloat64}, {float64(0)}, {""}, {"a\x00b"},
		{[]byte{0, 1, 2}}, {nil}, {true, false}, {int64(7), "x", 1.5},
	} {
		s, err := EncodeKey(vals)
		if err != nil {
			t.Fatalf("%v: %v", vals, err)
		}
		got, err := DecodeKey(s, nil)
		if err != nil || !reflect.DeepEqual(got, vals) {
			t.Errorf("%v: decoded %v, %v", vals, got, err)
		}
	}
	if _, err := EncodeKey([]any{struct{}{}}); err == nil {
		t.Error("an unknown type was encoded")
	}
	for _, bad := range []string{"x", "s\x05ab", "f\x00", "i"} {
		if _, err := DecodeKey(bad, nil); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func FuzzDecodeKey(f *testing.F) {
	f.Add("i\x02s\x01a")
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := DecodeKey(s, nil)
		if err != nil {
			return
		}
		again, err := EncodeKey(vals)
		if err != nil {
			t.Fatalf("%q: re-encode: %v", s, err)
		}
		back, err := DecodeKey(again, nil)
		if err != nil {
			t.Fatalf("%q: re-encoded %q does not decode: %v", s, again, err)
		}
		if third, _ := EncodeKey(back); third != again {
			t.Fatalf("%q: %q and %q", s, again, third)
		}
	})
}
