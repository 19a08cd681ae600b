// Package jsontext checks that JSON text reads back as it was written,
// for the ledger and the HTTP face alike (docs/ledger.md, "Choosing a
// key"; docs/serve.md, "Endpoints"). It imports nothing of the project's
// own: serve, which imports nothing else of it, uses it too.
package jsontext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Check refuses JSON text whose strings would not read back as they
// were written: bytes that are not UTF-8, and \u escapes of a lone UTF-16
// surrogate. encoding/json reads both as U+FFFD, so two different keys
// ("M\xfcller" and "M\xe4ller" in Latin-1, "x\ud800" and "x\udbff") would
// be one key, and two parameter sets one fingerprint (docs/ledger.md,
// "Choosing a key"). It checks the strings only; the decoder checks the
// rest of the syntax.
func Check(b []byte) error {
	if !utf8.Valid(b) {
		return fmt.Errorf("not valid UTF-8 at byte %d", InvalidAt(b))
	}
	return Surrogates(b)
}

// Surrogates refuses JSON text holding, in a string, the \u escape of a
// lone UTF-16 surrogate: it has no UTF-8 form, so a decoder reads it as
// U+FFFD (gjson also drops the escape after it), and PostgreSQL's jsonb
// refuses it. A surrogate pair is one character. Bytes that are not UTF-8
// are not its concern (docs/job-file.md, "Columns").
func Surrogates[T string | []byte](b T) error {
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\' && i+1 < len(b) && b[i+1] == 'u':
			r := hex4(b[i+2:])
			switch {
			case r < 0xD800 || r > 0xDFFF:
				i += 5
			case r < 0xDC00 && i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' && uint32(hex4(b[i+8:])-0xDC00) < 0x400:
				i += 11 // a surrogate pair: one character
			default:
				return fmt.Errorf("a lone UTF-16 surrogate %s at byte %d (not a character)", string(b[i:i+6]), i)
			}
		case c == '\\':
			i++
		}
	}
	return nil
}

// hex4 is the value of the 4 hex digits b starts with, or -1.
func hex4[T string | []byte](b T) rune {
	if len(b) < 4 {
		return -1
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return rune(v)
}

// InvalidAt is the offset of the first byte of b that is not UTF-8.
func InvalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// Duplicates refuses JSON text in which an object, at any depth, names a
// member twice: encoding/json keeps the last one, so {"key":"a","key":"b"}
// would be read as the key b (and other readers keep the first). Names
// are compared as they read, escapes decoded ("a" and "\u0061" are one).
// Text that is not JSON passes: its syntax is the decoder's to report.
func Duplicates(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	// One entry per open object or array; names is nil for an array, and
	// key tells that an object's next token is a member's name.
	type open struct {
		names map[string]bool
		key   bool
	}
	var stack []*open
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if n := len(stack); n > 0 && stack[n-1].key {
			if name, ok := tok.(string); ok {
				if stack[n-1].names[name] {
					return fmt.Errorf("member %q given twice in one object (before byte %d)", name, dec.InputOffset())
				}
				stack[n-1].names[name] = true
				stack[n-1].key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &open{names: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &open{})
			continue
		case json.Delim('}'), json.Delim(']'):
			if len(stack) == 0 {
				return nil
			}
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object, a name comes next.
		if n := len(stack); n > 0 && stack[n-1].names != nil {
			stack[n-1].key = true
		}
	}
}
