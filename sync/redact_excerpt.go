package sync

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// excerptWindow is how much of a text Excerpt redacts: an error body may
// be as large as source.max_body, and only its start is shown.
const excerptWindow = 64 << 10

// Excerpt returns at most n bytes of text, on one line, with every secret
// redacted. The order matters (docs/job-file.md, "What is and is not a
// secret"): the text is redacted first, whole, and only then are its
// whitespace runs collapsed and the result cut, so that neither a secret
// cut at the limit nor one with double spaces or tabs escapes the match.
// Control characters and bytes that are not UTF-8 are then written as
// escapes (\x1b, \u009b, \xff): the excerpt goes to a terminal, and a
// server's body must not drive it (docs/operations.md, "Logs").
func (r *Redactor) Excerpt(text string, n int) string {
	cut := len(text) > excerptWindow
	if cut {
		text = text[:excerptWindow]
	}
	s := strings.Join(strings.Fields(r.Redact(text)), " ")
	if cut {
		// A secret that crosses the window's end was not matched: drop as
		// much of the end as a secret can take (escaped, 6 bytes a byte).
		s = s[:max(0, len(s)-6*r.longest())]
	}
	s = escapeControls(s)
	if len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i] + "…"
	}
	return s
}

// longest returns the length of the longest secret (at least that of a
// URL password the patterns may have missed at the end: 256).
func (r *Redactor) longest() int {
	n := 256
	if r == nil {
		return n
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.secrets) > 0 {
		n = max(n, len(r.secrets[0]))
	}
	return n
}

// escapeControls writes the control characters of s (C0, DEL, C1) and its
// bytes that are not UTF-8 as Go escapes, and leaves the rest as it is.
func escapeControls(s string) string {
	clean := true
	for _, c := range s {
		if c == utf8.RuneError || unicode.IsControl(c) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case c < 0x80 && unicode.IsControl(c):
			fmt.Fprintf(&b, `\x%02x`, c)
		case unicode.IsControl(c):
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
