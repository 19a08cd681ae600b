package sync

import (
	"fmt"
	"testing"
	"time"
)

// A value boxed by boxes is an ordinary value of its type: equal to Go's
// own boxing of it, found by a type switch and an assertion, a map key
// equal to Go's, printed alike, and it keeps its value while the block it
// lives in hands out more slots (more than one block's worth, so blocks
// are replaced too).
func TestBoxesAreOrdinaryValues(t *testing.T) {
	var b boxes
	ts := time.Date(2024, 6, 30, 21, 59, 59, 123456789, time.UTC)
	var got, want []any
	for i := range 3000 {
		s := fmt.Sprintf("text %d", i)
		got = append(got, b.string(s), b.int64(int64(i)-1500), b.float64(float64(i)/3), b.time(ts.Add(time.Duration(i))))
		want = append(want, s, int64(i)-1500, float64(i)/3, ts.Add(time.Duration(i)))
	}
	keys := map[any]int{}
	for i, w := range want {
		keys[w] = i
	}
	for i, g := range got {
		w := want[i]
		if g != w || fmt.Sprintf("%T %#v", g, g) != fmt.Sprintf("%T %#v", w, w) {
			t.Fatalf("value %d: %T %#v, want %T %#v", i, g, g, w, w)
		}
		if keys[g] != i {
			t.Fatalf("value %d (%v) as a map key finds %d", i, g, keys[g])
		}
		switch x := g.(type) {
		case string:
			if x != w.(string) {
				t.Fatalf("value %d: string %q", i, x)
			}
		case int64, float64:
		case time.Time:
			if !x.Equal(w.(time.Time)) || x.Location() != time.UTC {
				t.Fatalf("value %d: time %v", i, x)
			}
		default:
			t.Fatalf("value %d: type %T", i, g)
		}
	}
	var hashes []string
	for i := range 3000 {
		hashes = append(hashes, b.hashText(uint64(i)*0x9e3779b97f4a7c15))
	}
	for i, h := range hashes {
		if want := fmt.Sprintf("%x", uint64(i)*0x9e3779b97f4a7c15); h != want {
			t.Fatalf("hash %d: %q, want %q", i, h, want)
		}
	}
}
