package infer

import (
	"reflect"
	"testing"

	"github.com/tidwall/gjson"
)

func TestOf(t *testing.T) {
	for raw, want := range map[string]string{
		`null`: "", `true`: Boolean, `false`: Boolean, `0`: Integer, `-42`: Integer,
		`9223372036854775807`: Integer, `9223372036854775808`: Numeric, `79.19`: Numeric,
		`5.0`: Numeric, `1e3`: Numeric, `"12"`: Text, `"2024-05-01T00:00:00Z"`: Text, `""`: Text,
		`{"a":1}`: JSON, `[]`: JSON,
	} {
		if got := Of(gjson.Parse(raw)); got != want {
			t.Errorf("Of(%s) = %q, want %q", raw, got, want)
		}
	}
	if got := Of(gjson.Parse(`{}`).Get("missing")); got != "" {
		t.Errorf("Of(missing) = %q, want \"\"", got)
	}
}

func TestJoin(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{Integer, Numeric, Numeric},
		{Integer, Real, Real},
		{Numeric, Real, Real},
		{Integer, Text, Text},
		{Numeric, Text, Text},
		{Boolean, Integer, Text},
		{Boolean, Text, Text},
		{Timestamp, Text, Text},
		{Timestamp, Integer, Text},
		{Real, Boolean, Text},
		{Text, JSON, JSON},
		{Integer, JSON, JSON},
		{Boolean, JSON, JSON},
		{"", Integer, Integer},
		{"", "", ""},
	} {
		if got := Join(c.a, c.b); got != c.want {
			t.Errorf("Join(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

// The join is a lattice's: commutative, associative, idempotent, null at
// the bottom and json at the top; widening only ever goes up.
func TestJoinLattice(t *testing.T) {
	all := []string{"", Integer, Numeric, Real, Boolean, Timestamp, Text, JSON}
	for _, a := range all {
		if Join(a, a) != a || Join("", a) != a || Join(a, JSON) != JSON {
			t.Errorf("%q: idempotence, bottom or top broken", a)
		}
		for _, b := range all {
			ab := Join(a, b)
			if ab != Join(b, a) {
				t.Errorf("Join(%q, %q) = %q but Join(%q, %q) = %q", a, b, ab, b, a, Join(b, a))
			}
			if Join(a, ab) != ab || Join(b, ab) != ab {
				t.Errorf("Join(%q, %q) = %q is not above both", a, b, ab)
			}
			for _, c := range all {
				if Join(Join(a, b), c) != Join(a, Join(b, c)) {
					t.Errorf("Join not associative on %q, %q, %q", a, b, c)
				}
			}
		}
	}
}

// The whole page decides a field's type, in the order fields first appear;
// a field null everywhere has type "".
func TestFields(t *testing.T) {
	var recs []gjson.Result
	for _, raw := range []string{
		`{"id":1,"price":0,"gone":null}`,
		`{"id":2,"price":79.19,"tags":["a"],"note":"x"}`,
		`[1]`,
		`{"id":3,"note":12,"tags":{"a":1},"gone":null}`,
	} {
		recs = append(recs, gjson.Parse(raw))
	}
	names, types := Fields(recs)
	if want := []string{"id", "price", "gone", "tags", "note"}; !reflect.DeepEqual(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	want := map[string]string{"id": Integer, "price": Numeric, "gone": "", "tags": JSON, "note": Text}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("types %v, want %v", types, want)
	}
}
