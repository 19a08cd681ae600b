package postgres

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// A copied page (copy.go) is sent as COPY's binary format built here
// from the engine's values, rather than by pgx's CopyFrom from the
// merge's (pageValues): pgx encodes each boxed value through its type
// map, a decimal by big.Int arithmetic, which with the boxing was 25
// allocations a row of the bench's shape and a fifth of a first load's
// CPU (docs/performance.md, "Round five"). Each column type's wire
// function (types.go) writes exactly the bytes pgx writes for the merge's
// value of it, so a copied row stores what the merge would store:
// TestCopyPageEncodesAsPgx and FuzzCopyNumeric hold the two encodings
// equal, byte for byte.

// copyHeader is the binary COPY format's signature, then its flags and
// header extension length, both 0.
const copyHeader = "PGCOPY\n\377\r\n\000" + "\000\000\000\000" + "\000\000\000\000"

// copyPage appends to buf the binary COPY stream of the deduplicated
// page kept: each row's values in t's column order, its hash and the
// synced-at time. A row of the wrong width or a value its column cannot
// take fails as in pageValues, with the same error.
func copyPage(buf []byte, op string, t *contract.Table, kept []contract.Row, synced time.Time) ([]byte, error) {
	wire := make([]func([]byte, any) ([]byte, bool), len(t.Columns))
	for j := range t.Columns {
		wire[j] = typeOf(t.Columns[j].Type).wire
	}
	var at [12]byte // the synced-at field, the same in every row
	wireTimestamptz(at[:0], synced)
	fields := uint16(len(t.Columns) + 2)
	buf = append(buf, copyHeader...)
	for _, r := range kept {
		if err := rowWidth(op, t, r); err != nil {
			return nil, err
		}
		buf = binary.BigEndian.AppendUint16(buf, fields)
		for j, v := range r.Values {
			if v == nil {
				buf = binary.BigEndian.AppendUint32(buf, math.MaxUint32) // -1: NULL
				continue
			}
			var ok bool
			if buf, ok = wire[j](buf, v); !ok {
				return nil, fmt.Errorf("%s: %w", op, sqlkit.ValueError(&t.Columns[j], v))
			}
		}
		buf, _ = wireText(buf, r.Hash)
		buf = append(buf, at[:]...)
	}
	return binary.BigEndian.AppendUint16(buf, math.MaxUint16), nil // the trailer, -1
}

// The wire functions append a value's length, then its binary form, as
// pgx's codecs encode the merge's value of it (types.go's value); false
// leaves buf as it was, for a value of a Go type the column cannot take.

func wireText(buf []byte, v any) ([]byte, bool) {
	s, ok := v.(string)
	if !ok {
		return buf, false
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
	return append(buf, s...), true
}

func wireInt8(buf []byte, v any) ([]byte, bool) {
	n, ok := sqlkit.AsInt64(v)
	if !ok {
		return buf, false
	}
	return binary.BigEndian.AppendUint64(append(buf, 0, 0, 0, 8), uint64(n)), true
}

func wireFloat8(buf []byte, v any) ([]byte, bool) {
	f, ok := sqlkit.AsFloat64(v)
	if !ok {
		return buf, false
	}
	return binary.BigEndian.AppendUint64(append(buf, 0, 0, 0, 8), math.Float64bits(f)), true
}

func wireBool(buf []byte, v any) ([]byte, bool) {
	b, ok := v.(bool)
	if !ok {
		return buf, false
	}
	if b {
		return append(buf, 0, 0, 0, 1, 1), true
	}
	return append(buf, 0, 0, 0, 1, 0), true
}

func wireTimestamp(buf []byte, v any) ([]byte, bool) {
	tm, ok := v.(time.Time)
	if !ok {
		return buf, false
	}
	return wireTimestamptz(buf, tm), true
}

// microsecY2K is 2000-01-01 00:00 UTC, timestamptz's epoch, in
// microseconds since the Unix epoch.
const microsecY2K = 946684800 * 1000000

// wireTimestamptz is tm in microseconds since 2000-01-01 UTC, the
// nanoseconds below a microsecond dropped (towards the past), as pgx
// encodes it.
func wireTimestamptz(buf []byte, tm time.Time) []byte {
	us := tm.Unix()*1000000 + int64(tm.Nanosecond())/1000 - microsecY2K
	return binary.BigEndian.AppendUint64(append(buf, 0, 0, 0, 8), uint64(us))
}

// wireJSONB is jsonb's binary form: its version, 1, then the JSON text
// as sent, which the server parses as it parses the merge's text.
func wireJSONB(buf []byte, v any) ([]byte, bool) {
	s, ok := sqlkit.AsJSON(v)
	if !ok {
		return buf, false
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)+1))
	return append(append(buf, 1), s...), true
}

func wireNumeric(buf []byte, v any) ([]byte, bool) {
	s, ok := v.(string)
	if !ok {
		return buf, false
	}
	start := len(buf)
	out, ok := appendNumeric(append(buf, 0, 0, 0, 0), s)
	if !ok {
		return buf, false
	}
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start-4))
	return out, true
}

// appendNumeric appends the decimal s (sqlkit.ParseDecimal's syntax and
// limits) in numeric's binary form, the digits read from the text rather
// than through big.Int, as pgx encodes the merge's value of it
// (numericValue): the number ±D × 10^E (D the digits as written, E the
// exponent of the last) with D padded by up to 3 zeros so that E is a
// multiple of 4, written as base-10,000 digits from the first holding a
// significant decimal digit (with a value below 1, from the one just
// after the point) down to the one holding the last decimal digit,
// trailing zeros kept; the weight is the power of 10,000 of the first;
// the display scale is −E of s as written, 0 for E ≥ 0. sqlkit's limits
// keep the weight and the number of digits within their 16 bits.
func appendNumeric(buf []byte, s string) ([]byte, bool) {
	neg, ip, fp, e, ok := sqlkit.SplitDecimal(s)
	if !ok {
		return buf, false
	}
	e4 := e - ((e%4)+4)%4 // E rounded down to a multiple of 4
	n := int64(len(ip)+len(fp)) + e - e4
	digit := func(i int64) int16 { // digit i of D padded, 0 outside it
		switch {
		case i < 0 || i >= int64(len(ip)+len(fp)):
			return 0
		case i < int64(len(ip)):
			return int16(ip[i] - '0')
		}
		return int16(fp[i-int64(len(ip))] - '0')
	}
	z := int64(-1) // D's first significant digit
	for i := range int64(len(ip) + len(fp)) {
		if digit(i) != 0 {
			z = i
			break
		}
	}
	low := e4 / 4 // the power of 10,000 of the last digit
	top := low - 1
	if z >= 0 {
		top = low + (n-1-z)/4
	}
	if e4 < 0 && top < -1 {
		top = -1
	}
	var sign, dscale uint16
	if neg && z >= 0 {
		sign = 0x4000
	}
	if e < 0 {
		dscale = uint16(-e)
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(top-low+1))
	buf = binary.BigEndian.AppendUint16(buf, uint16(int16(top)))
	buf = binary.BigEndian.AppendUint16(buf, sign)
	buf = binary.BigEndian.AppendUint16(buf, dscale)
	for k := top; k >= low; k-- {
		last := n - 1 - 4*(k-low) // D's index of the group's last digit
		g := digit(last-3)*1000 + digit(last-2)*100 + digit(last-1)*10 + digit(last)
		buf = binary.BigEndian.AppendUint16(buf, uint16(g))
	}
	return buf, true
}
