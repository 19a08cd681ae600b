// Package keylist is the one encoding of a page's row keys that both state
// stores keep with the page (docs/deletions.md, "Two passes"), so a state
// moves between stores byte for byte.
package keylist

import (
	"encoding/binary"
	"errors"
)

// format is the first byte of an encoded key list. It also keeps an empty
// list from being an empty value, which reads back as NULL.
const format = 1

// Encode packs keys into one value: a format byte, then each key as its
// length (uvarint) and its bytes, so any byte (NUL too) may occur in a key.
// nil gives nil (SQL NULL: not recorded).
func Encode(keys []string) []byte {
	if keys == nil {
		return nil
	}
	b := make([]byte, 1, 1+8*len(keys))
	b[0] = format
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	return b
}

// Decode calls fn with every key Encode packed into b.
func Decode(b []byte, fn func(string) error) error {
	if len(b) == 0 || b[0] != format {
		return errors.New("unknown key list format")
	}
	for b = b[1:]; len(b) > 0; {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return errors.New("corrupt key list")
		}
		if err := fn(string(b[w : w+int(n)])); err != nil {
			return err
		}
		b = b[w+int(n):]
	}
	return nil
}
