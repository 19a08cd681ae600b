package sync

import (
	"strings"
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
