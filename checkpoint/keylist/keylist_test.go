package keylist

import (
	"slices"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, keys := range [][]string{{}, {""}, {"a", "a\x00b", "", "ü€", string(make([]byte, 300))}} {
		var got []string
		if err := Decode(Encode(keys), func(k string) error { got = append(got, k); return nil }); err != nil {
			t.Fatalf("%q: %v", keys, err)
		}
		if !slices.Equal(got, keys) && !(len(got) == 0 && len(keys) == 0) {
			t.Errorf("round trip of %q gave %q", keys, got)
		}
	}
	if Encode(nil) != nil {
		t.Error("nil keys must encode to nil (not recorded)")
	}
}

func TestDecodeRefusesBadInput(t *testing.T) {
	noop := func(string) error { return nil }
	for _, b := range [][]byte{nil, {}, {2, 0}, {format, 5, 'a'}, {format, 0x80}} {
		if err := Decode(b, noop); err == nil {
			t.Errorf("Decode(%v) accepted it", b)
		}
	}
}
