package sync

import (
	"strings"
	"testing"
)

// A secret is redacted in every form a JSON string or a URL can give it.
func TestRedactEncodings(t *testing.T) {
	const secret = "tok/en-Zy9+x"
	r := NewRedactor()
	r.Add(secret)
	for _, in := range []string{
		`{"error":"bad token tok\/en-Zy9+x"}`,
		`{"error":"bad token tok\/en\u002dZy9+x"}`,
		`{"error":"bad token \u0074ok\u002Fen\u002dZy9\u002bx"}`,
		`https://api.example.com/v1?t=tok%2Fen-Zy9%2Bx`,
		`https://api.example.com/v1?t=tok%2fen%2DZy9%2bx`,
		`{"echo":"tok\\/en-Zy9+x"}`,
	} {
		out := r.Redact(in)
		if !strings.Contains(out, Redacted) {
			t.Errorf("%s: not redacted: %s", in, out)
		}
		for _, part := range []string{"Zy9", "en-Z", `en\u002d`} {
			if strings.Contains(out, part) {
				t.Errorf("%s: %q left in %s", in, part, out)
			}
		}
	}
	if got := r.Redact(`plain \u0041 text 100%`); got != `plain \u0041 text 100%` {
		t.Errorf("ordinary text changed: %s", got)
	}
}
