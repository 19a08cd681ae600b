package sqlkit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// EncodeKey packs the bound values of one row's key columns into one
// string that DecodeKey reads back with their Go types, so that a key
// recorded by one invocation binds exactly the same values in a later one
// (the seen keys of a full pass, docs/deletions.md). Each value is a type
// byte and, for variable-length values, its length (uvarint) and bytes:
// any byte may occur in a text key.
func EncodeKey(vals []any) (string, error) {
	b, err := AppendKey(nil, vals)
	return string(b), err
}

// AppendKey appends EncodeKey's form of vals to b: a sink encoding a
// page's keys reuses one buffer instead of growing one per key.
func AppendKey(b []byte, vals []any) ([]byte, error) {
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			b = append(b, 'n')
		case int64:
			b = binary.AppendVarint(append(b, 'i'), x)
		case float64:
			b = binary.BigEndian.AppendUint64(append(b, 'f'), math.Float64bits(x))
		case bool:
			if x {
				b = append(b, 'T')
			} else {
				b = append(b, 'F')
			}
		case string:
			b = append(binary.AppendUvarint(append(b, 's'), uint64(len(x))), x...)
		case []byte:
			b = append(binary.AppendUvarint(append(b, 'b'), uint64(len(x))), x...)
		default:
			return b, fmt.Errorf("key value of type %T cannot be recorded", v)
		}
	}
	return b, nil
}

// SplitKeys returns the keys AppendKey packed into buf one after
// another, the i-th ending at ends[i], as strings that share one
// allocation (a page's keys live as long as its commit).
func SplitKeys(buf []byte, ends []int) []string {
	all := string(buf)
	out := make([]string, len(ends))
	start := 0
	for i, end := range ends {
		out[i], start = all[start:end], end
	}
	return out
}

// errCorruptKey is returned for a string EncodeKey did not write.
var errCorruptKey = errors.New("corrupt recorded key")

// DecodeKey reads a key EncodeKey wrote into vals (appended to and
// returned), failing on anything else.
func DecodeKey(s string, vals []any) ([]any, error) {
	r := strings.NewReader(s)
	for r.Len() > 0 {
		tag, _ := r.ReadByte()
		switch tag {
		case 'n':
			vals = append(vals, nil)
		case 'T', 'F':
			vals = append(vals, tag == 'T')
		case 'i':
			n, err := binary.ReadVarint(r)
			if err != nil {
				return nil, errCorruptKey
			}
			vals = append(vals, n)
		case 'f':
			var u uint64
			if err := binary.Read(r, binary.BigEndian, &u); err != nil {
				return nil, errCorruptKey
			}
			vals = append(vals, math.Float64frombits(u))
		case 's', 'b':
			n, err := binary.ReadUvarint(r)
			if err != nil || n > uint64(r.Len()) {
				return nil, errCorruptKey
			}
			buf := make([]byte, n)
			_, _ = r.Read(buf)
			if tag == 's' {
				vals = append(vals, string(buf))
			} else {
				vals = append(vals, buf)
			}
		default:
			return nil, errCorruptKey
		}
	}
	return vals, nil
}
