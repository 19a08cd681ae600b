package sync

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// redactDecoded replaces every secret that appears in s once its JSON
// string escapes (\/, \u002d, \", \t, also doubly escaped \\/), URL percent
// escapes (%2F, %2f) and HTML character references (&amp;, &#39;, &#x3C;)
// are decoded: an API may echo a token in any of these forms (an error
// page in HTML escapes a password's & < > ' "). The matching source text is replaced whole by [redacted]; text
// without escapes is returned unchanged.
func redactDecoded(s string, secrets []string) string {
	if len(secrets) == 0 || !strings.ContainsAny(s, `\%&`) {
		return s
	}
	dec, spans := decodeEscapes(s)
	type span struct{ from, to int }
	var hits []span
	for _, v := range secrets {
		for off := 0; ; {
			i := bytes.Index(dec[off:], []byte(v))
			if i < 0 {
				break
			}
			i += off
			j := i + len(v)
			if !wholeToken(string(dec), i, j) {
				off = i + 1
				continue
			}
			hits = append(hits, span{spans[i][0], spans[j-1][1]})
			off = j
		}
	}
	if len(hits) == 0 {
		return s
	}
	// Merge overlapping hits, then rebuild s.
	for i := 1; i < len(hits); i++ {
		for j := i; j > 0 && hits[j].from < hits[j-1].from; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(hits); {
		from, to := hits[i].from, hits[i].to
		for i++; i < len(hits) && hits[i].from < to; i++ {
			to = max(to, hits[i].to)
		}
		from = max(from, last)
		b.WriteString(s[last:from])
		b.WriteString(Redacted)
		last = to
	}
	b.WriteString(s[last:])
	return b.String()
}

// decodeEscapes decodes JSON and percent escapes and HTML character
// references in s, returning the bytes
// and, for each decoded byte, the [from, to) span of s it came from.
func decodeEscapes(s string) ([]byte, [][2]int) {
	dec := make([]byte, 0, len(s))
	spans := make([][2]int, 0, len(s))
	emit := func(p []byte, from, to int) {
		for _, c := range p {
			dec = append(dec, c)
			spans = append(spans, [2]int{from, to})
		}
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '\\':
			j := i
			for j < len(s) && s[j] == '\\' {
				j++
			}
			if r, n := jsonEscape(s, j); n > 0 {
				var buf [utf8.UTFMax]byte
				emit(buf[:utf8.EncodeRune(buf[:], r)], i, j+n)
				i = j + n
				continue
			}
			emit([]byte{'\\'}, i, i+1)
			i++
		case '&':
			if r, n := htmlReference(s[i:]); n > 0 {
				var buf [utf8.UTFMax]byte
				emit(buf[:utf8.EncodeRune(buf[:], r)], i, i+n)
				i += n
				continue
			}
			emit([]byte{'&'}, i, i+1)
			i++
		case '%':
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				emit([]byte{unhex(s[i+1])<<4 | unhex(s[i+2])}, i, i+3)
				i += 3
				continue
			}
			emit([]byte{'%'}, i, i+1)
			i++
		default:
			emit([]byte{s[i]}, i, i+1)
			i++
		}
	}
	return dec, spans
}

// jsonEscape decodes the escape whose letter is at s[j] (after its
// backslashes): the rune and the bytes it used, or 0 bytes for none.
func jsonEscape(s string, j int) (rune, int) {
	if j >= len(s) {
		return 0, 0
	}
	switch s[j] {
	case '/', '"':
		return rune(s[j]), 1
	case 't':
		return '\t', 1
	case 'n':
		return '\n', 1
	case 'r':
		return '\r', 1
	case 'b':
		return '\b', 1
	case 'f':
		return '\f', 1
	case 'u':
		r, ok := hex4(s, j+1)
		if !ok {
			return 0, 0
		}
		if utf16.IsSurrogate(r) {
			k := j + 5
			for k < len(s) && s[k] == '\\' {
				k++
			}
			if k < len(s) && s[k] == 'u' {
				if r2, ok := hex4(s, k+1); ok {
					if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
						return c, k + 5 - j
					}
				}
			}
		}
		return r, 5
	}
	return 0, 0
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		if !isHex(c) {
			return 0, false
		}
		r = r<<4 | rune(unhex(c))
	}
	return r, true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// htmlNamed are the named character references an HTML page escapes text
// with.
var htmlNamed = map[string]rune{"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\'', "nbsp": '\u00a0'}

// htmlReference decodes the HTML character reference s begins with
// (&amp;, &#39;, &#x3C;): the rune and its length, or 0 for none.
func htmlReference(s string) (rune, int) {
	end := strings.IndexByte(s, ';')
	if end < 2 || end > 10 {
		return 0, 0
	}
	name := s[1:end]
	if r, ok := htmlNamed[name]; ok {
		return r, end + 1
	}
	if name[0] != '#' || len(name) < 2 {
		return 0, 0
	}
	digits, base := name[1:], 10
	if digits[0] == 'x' || digits[0] == 'X' {
		digits, base = digits[1:], 16
	}
	if digits == "" {
		return 0, 0
	}
	var r rune
	for _, c := range []byte(digits) {
		switch {
		case base == 10 && c >= '0' && c <= '9', base == 16 && isHex(c):
			r = r*rune(base) + rune(unhex(c))
		default:
			return 0, 0
		}
		if r > utf8.MaxRune {
			return 0, 0
		}
	}
	return r, end + 1
}
