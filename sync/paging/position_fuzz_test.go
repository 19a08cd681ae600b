package paging_test

import (
	"testing"

	"github.com/idemsync/idemsync/sync/paging"
)

// fuzzStyles are the styles a fuzzed position is read with: "" is status
// without the job file, "bogus" a style no build knows.
var fuzzStyles = []string{"", paging.StylePage, paging.StyleOffset, paging.StyleCursor, paging.StyleLink, paging.StyleHWM, paging.StyleNone, "bogus"}

type keep struct{}

func (keep) Redact(s string) string { return s }

// FuzzPosition reads hostile text as a stored checkpoint (DecodePosition:
// a state file edited or damaged by hand, either format) and as a
// replay's --from/--to (ParsePosition). Neither panics; a position read
// without error is stored again and read back as the same position, so a
// resumed run asks for the page the checkpoint named (docs/architecture.md,
// "Positions").
func FuzzPosition(f *testing.F) {
	for _, s := range []string{
		`{"v":2,"style":"page","at":{"page":3,"size":7}}`,
		`{"v":2,"style":"cursor","at":{"cursor":"c9"},"win":1,"parent":"id=42","fly":{"pos":{"2":{"cursor":"c2"}},"started":3,"rows":{"1":"{\"id\":\"42\"}"},"last":"x","since":"2024-05-01T00:00:00Z"}}`,
		`{"v":2,"style":"hwm","at":{"mark":"2024-05-01T10:00:00Z"},"end":true}`,
		`{"v":2,"fly":{"done":[1],"started":3}}`,
		`{"v":3,"style":"page","at":{"page":2}}`,
		`{"page":5,"win":2,"fly":"{\"pos\":{\"3\":{\"page\":2},\"5\":{\"page\":1,\"size\":10}},\"done\":[4],\"started\":6}"}`,
		`{"url":"https://api.example.com/v1/orders?after=9\u0026token=s3cret"}`,
		`{"end":true,"parent":"-"}`,
		`https://api.example.com/v1/orders?page=2`,
		`42`,
		`2024-05-01T10:00:00+02:00`,
	} {
		for i := range fuzzStyles {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, s string) {
		style := fuzzStyles[int(i)%len(fuzzStyles)]
		if p, err := paging.DecodePosition(style, s); err == nil {
			p.Describe(style, keep{})
			roundTrip(t, style, p)
		}
		if p, err := paging.ParsePosition(style, s); err == nil {
			p.Describe(style, keep{})
			back := roundTrip(t, style, p)
			if back.At != p.At {
				t.Fatalf("--from %q (%s) is %#v, stored and read back %#v", s, style, p.At, back.At)
			}
		}
	})
}

// roundTrip stores p, reads it back, and fails unless storing what was
// read gives the same text.
func roundTrip(t *testing.T, style string, p paging.Position) paging.Position {
	t.Helper()
	enc := p.Encode()
	back, err := paging.DecodePosition(style, enc)
	if err != nil {
		t.Fatalf("%#v stored as %s: reads back as %v", p, enc, err)
	}
	if again := back.Encode(); again != enc {
		t.Fatalf("%#v stored as %s, read back and stored again as %s", p, enc, again)
	}
	return back
}
