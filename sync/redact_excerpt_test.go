package sync

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// An error excerpt is printed on stderr, a terminal most of the time: the
// body of a hostile or broken server must not reach it as control
// sequences (ESC [ 2 J clears the screen, OSC 8 forges links, a C1 CSI
// does the same in one byte) or as bytes that are not UTF-8. They are
// shown escaped, after the secrets are redacted, so an escape can neither
// hide a secret from the redaction nor cut one in two.
func TestExcerptEscapesControlBytes(t *testing.T) {
	r := NewRedactor()
	r.Add("s3cr3t-t0ken")
	body := "{\"error\": \"bad\x1b[2J\x1b]8;;http://evil/\x07link\x1b]8;;\x07 \u009b31m s3cr3t-t0ken\x00\x7f \xff\xfe end\"}"
	got := r.Excerpt(body, 200)
	for i, c := range got {
		if c == utf8.RuneError || (unicode.IsControl(c) && c != ' ') {
			t.Fatalf("excerpt holds %U at byte %d: %q", c, i, got)
		}
	}
	if !utf8.ValidString(got) {
		t.Fatalf("excerpt is not UTF-8: %q", got)
	}
	if strings.Contains(got, "s3cr3t-t0ken") {
		t.Fatalf("secret in excerpt: %q", got)
	}
	for _, want := range []string{`bad\x1b[2J`, `\x07`, `\u009b31m`, `\x00\x7f`, `\xff\xfe end`} {
		if !strings.Contains(got, want) {
			t.Fatalf("excerpt %q lacks %q", got, want)
		}
	}
	// Plain text is left as it is.
	if got := r.Excerpt(`{"error": "rate limited — try later"}`, 200); got != `{"error": "rate limited — try later"}` {
		t.Fatalf("plain excerpt changed: %q", got)
	}
}
