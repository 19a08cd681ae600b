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

// A secret is redacted in every form an HTML page escapes it in: named
// and numeric character references (decimal, hex in either case).
func TestRedactHTMLReferences(t *testing.T) {
	const secret = `pa&ss<wo>rd'Zq9"x`
	r := NewRedactor()
	r.Add(secret)
	for _, in := range []string{
		`<p>password pa&amp;ss&lt;wo&gt;rd&#39;Zq9&quot;x refused</p>`,
		`<p>password pa&#38;ss&#x3C;wo&#X3e;rd&#x27;Zq9&#34;x refused</p>`,
		`<p>password pa&amp;ss&lt;wo&gt;rd&apos;Zq9&#0034;x refused</p>`,
	} {
		out := r.Redact(in)
		if !strings.Contains(out, Redacted) || strings.Contains(out, "Zq9") || !strings.HasSuffix(out, " refused</p>") {
			t.Errorf("%s: not redacted: %s", in, out)
		}
	}
	for _, plain := range []string{`Tom &amp; Jerry &#38; &#xZZ; &unknown; &#; & done`, `a&b`} {
		if got := r.Redact(plain); got != plain {
			t.Errorf("ordinary text changed: %s → %s", plain, got)
		}
	}
}
