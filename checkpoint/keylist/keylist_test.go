package keylist

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/idemsync/idemsync/sink/sqlkit"
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
	for _, b := range [][]byte{nil, {}, {3, 0}, {plain, 5, 'a'}, {plain, 0x80}, {compact, 0x80}, {compact, 4, 1, 'a'}, {compact, 0, 5, 'a'}} {
		if err := Decode(b, noop); err == nil {
			t.Errorf("Decode(%v) accepted it", b)
		}
	}
}

// sinkKey is a key in sqlkit.AppendKey's form of the values vals.
func sinkKey(t *testing.T, vals ...any) string {
	t.Helper()
	b, err := sqlkit.AppendKey(nil, vals)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A page's keys as the sinks record them cost about what differs from the
// key before: a byte a key for consecutive integer ids (SQLite's stored
// form), about three for consecutive ids as text (PostgreSQL's), where each key
// whole with its length cost 5 and 9 (docs/deletions.md, "In the state
// file").
func TestEncodeIsCompact(t *testing.T) {
	var ints, texts []string
	for id := 99_001; id <= 100_000; id++ {
		ints = append(ints, sinkKey(t, int64(id)))
		texts = append(texts, sinkKey(t, strconv.Itoa(id)))
	}
	for _, tc := range []struct {
		name string
		keys []string
		max  int
	}{{"integer ids", ints, 1_010}, {"ids as text", texts, 3_200}} {
		if n := len(Encode(tc.keys)); n > tc.max {
			t.Errorf("%s: 1,000 keys encoded in %d bytes, want <= %d", tc.name, n, tc.max)
		}
	}
}

// Every key comes back byte for byte, whatever it holds: integer forms
// with deltas of any size and sign, bytes that look like an integer form
// and are not one (non-canonical varints, trailing bytes), other forms
// between integer ones, keys that are prefixes of each other.
func TestCompactRoundTrip(t *testing.T) {
	keys := []string{
		sinkKey(t, int64(5)), sinkKey(t, int64(6)), sinkKey(t, int64(4)),
		sinkKey(t, int64(math.MaxInt64)), sinkKey(t, int64(math.MinInt64)), sinkKey(t, int64(math.MaxInt64)),
		sinkKey(t, int64(0)),
		"i\x80\x00", // 0 as a non-canonical varint
		"i\x02\x00", // trailing byte
		"i", "", "i\xff",
		sinkKey(t, "abc"), sinkKey(t, "abcd"), sinkKey(t, "ab"), sinkKey(t, "ab"),
		sinkKey(t, int64(7)), // delta from 0, the last integer key
		sinkKey(t, int64(1), "x"), sinkKey(t, int64(1), "y"),
		string(make([]byte, 300)), "\x00",
	}
	var got []string
	if err := Decode(Encode(keys), func(k string) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, keys) {
		t.Errorf("round trip of\n%q\ngave\n%q", keys, got)
	}
}

// A list written in the plain format (before migration 0030) still reads.
func TestDecodesPlainFormat(t *testing.T) {
	b := []byte{plain, 1, 'a', 0, 3, 'i', 0x80, 0}
	var got []string
	if err := Decode(b, func(k string) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "", "i\x80\x00"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
