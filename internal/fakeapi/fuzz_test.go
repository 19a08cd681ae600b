package fakeapi

import (
	"strings"
	"testing"
)

func FuzzParseCents(f *testing.F) {
	for _, s := range []string{"12.50", "0.05", "-3", "1999.05", "1.234", "", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCents(s)
		if err != nil {
			return
		}
		// Whatever parses prints back to an equal amount with two decimals.
		back, err := ParseCents(c.String())
		if err != nil || back != c {
			t.Fatalf("%q → %v → %v (%v)", s, c, back, err)
		}
		if i := strings.IndexByte(c.String(), '.'); i < 0 || len(c.String())-i != 3 {
			t.Fatalf("%q printed as %q", s, c.String())
		}
	})
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(0))
	f.Add(encodeCursor(12345))
	f.Add("!!")
	f.Add("aWQ6LTE")
	f.Fuzz(func(t *testing.T, c string) {
		id, err := decodeCursor(c)
		if err != nil {
			return
		}
		if id < 0 {
			t.Fatalf("%q decoded to negative id %d", c, id)
		}
		if again, err := decodeCursor(encodeCursor(id)); err != nil || again != id {
			t.Fatalf("id %d does not round-trip: %d %v", id, again, err)
		}
	})
}
