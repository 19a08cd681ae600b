// Package keylist is the one encoding of a page's row keys that both state
// stores keep with the page (docs/deletions.md, "Two passes"), so a state
// moves between stores byte for byte.
package keylist

import (
	"encoding/binary"
	"errors"
)

// The first byte of an encoded key list says its format. It also keeps an
// empty list from being an empty value, which reads back as NULL.
const (
	// plain (format 1, written before migration 0030): each key as its
	// length (uvarint) and its bytes.
	plain = 1
	// compact (format 2): each key as a uvarint tag t, then
	//   - t odd: a key of the sinks' one-integer form ('i' and the
	//     integer's varint, sqlkit.AppendKey) whose integer is the previous
	//     such key's in the list (0 for the first) plus the zigzag delta
	//     t>>1;
	//   - t even: the first t>>1 bytes of the previous key, then the
	//     length (uvarint) and the bytes of the rest.
	// A page of consecutive integer ids costs a byte a key, and one of
	// keys sharing a prefix (decimal text, prefixed ids) the differing
	// tail, where plain spends the whole key and its length: the state
	// file, what its checkpoint writes and what its integrity check and
	// the end of a pass read shrink as much (docs/deletions.md, "In the
	// state file").
	compact = 2
)

// Encode packs keys into one value, in order, so that Decode gives back
// every key byte for byte (any byte, NUL too, may occur in a key). nil
// gives nil (SQL NULL: not recorded).
func Encode(keys []string) []byte {
	if keys == nil {
		return nil
	}
	b := make([]byte, 1, 1+2*len(keys))
	b[0] = compact
	var prevInt int64
	prev := ""
	for _, k := range keys {
		if v, ok := intForm(k); ok {
			if u := zigzag(v - prevInt); u < 1<<63 {
				b = binary.AppendUvarint(b, u<<1|1)
				prev, prevInt = k, v
				continue
			}
		}
		n := sharedPrefix(prev, k)
		b = binary.AppendUvarint(b, uint64(n)<<1)
		b = binary.AppendUvarint(b, uint64(len(k)-n))
		b = append(b, k[n:]...)
		prev = k
	}
	return b
}

// Decode calls fn with every key Encode packed into b, in order.
func Decode(b []byte, fn func(string) error) error {
	if len(b) == 0 {
		return errors.New("unknown key list format")
	}
	switch b[0] {
	case plain:
		return decodePlain(b[1:], fn)
	case compact:
		return decodeCompact(b[1:], fn)
	}
	return errors.New("unknown key list format")
}

var errCorrupt = errors.New("corrupt key list")

func decodePlain(b []byte, fn func(string) error) error {
	for len(b) > 0 {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return errCorrupt
		}
		if err := fn(string(b[w : w+int(n)])); err != nil {
			return err
		}
		b = b[w+int(n):]
	}
	return nil
}

func decodeCompact(b []byte, fn func(string) error) error {
	var prevInt int64
	prev := make([]byte, 0, 16)
	for len(b) > 0 {
		t, w := binary.Uvarint(b)
		if w <= 0 {
			return errCorrupt
		}
		b = b[w:]
		if t&1 == 1 {
			prevInt += unzigzag(t >> 1)
			prev = binary.AppendVarint(append(prev[:0], 'i'), prevInt)
		} else {
			shared := t >> 1
			n, w := binary.Uvarint(b)
			if w <= 0 || shared > uint64(len(prev)) || uint64(len(b)-w) < n {
				return errCorrupt
			}
			prev = append(prev[:shared], b[w:w+int(n)]...)
			b = b[w+int(n):]
		}
		if err := fn(string(prev)); err != nil {
			return err
		}
	}
	return nil
}

// intForm returns the integer of a key in the sinks' one-integer form:
// 'i' then the integer's varint, exactly as binary.AppendVarint writes it
// (any other bytes are not this form, so they round-trip as bytes).
func intForm(k string) (int64, bool) {
	if len(k) < 2 || len(k) > 1+binary.MaxVarintLen64 || k[0] != 'i' {
		return 0, false
	}
	var buf [1 + binary.MaxVarintLen64]byte
	n := copy(buf[:], k)
	v, w := binary.Varint(buf[1:n])
	if w != n-1 {
		return 0, false
	}
	var re [binary.MaxVarintLen64]byte
	if string(binary.AppendVarint(re[:0], v)) != k[1:] {
		return 0, false
	}
	return v, true
}

// sharedPrefix returns how many leading bytes a and b share.
func sharedPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func zigzag(d int64) uint64 { return uint64(d<<1) ^ uint64(d>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
