package paging

import (
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// A mark is a high-water-mark value: an RFC 3339 timestamp (any offset,
// any precision) or a number. Marks are kept and sent verbatim, in the form
// the API wrote them (an API that compares its since parameter as a string
// loses records tied on a rewritten mark), and compared by value.

// CheckMark returns s without surrounding space when it is a valid mark,
// and an error naming it when it is neither an RFC 3339 timestamp (within
// years 0000–9999 once in UTC) nor a number. The text is not rewritten.
func CheckMark(s string) (string, error) {
	s = strings.TrimSpace(s)
	if t, ok := ParseTime(s); ok {
		if t.UTC().Year() < 0 || t.UTC().Year() > 9999 {
			return "", fmt.Errorf("%q is out of range once in UTC", Elide(s, 40))
		}
		return s, nil
	}
	if IsDecimal(s) {
		return s, nil
	}
	return "", fmt.Errorf("%q is neither an RFC 3339 timestamp nor a number", Elide(s, 40))
}

// MarkFromJSON reads a mark from a record's field value, verbatim.
func MarkFromJSON(v gjson.Result) (string, error) {
	switch v.Type {
	case gjson.String:
		return CheckMark(v.Str)
	case gjson.Number:
		return CheckMark(v.Raw)
	}
	return "", fmt.Errorf("value %s is neither an RFC 3339 timestamp nor a number", Elide(v.Raw, 40))
}

// CompareMarks compares two marks by value: timestamps as instants,
// numbers numerically, anything else as strings. "" sorts first.
func CompareMarks(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return -1
	case b == "":
		return 1
	}
	if ta, ok := ParseTime(a); ok {
		if tb, ok := ParseTime(b); ok {
			return ta.Compare(tb)
		}
	}
	if IsDecimal(a) && IsDecimal(b) {
		ra, _ := new(big.Rat).SetString(a)
		rb, _ := new(big.Rat).SetString(b)
		return ra.Cmp(rb)
	}
	return strings.Compare(a, b)
}

// MarkKind is "timestamp" or "number" for a valid mark, "" for "". A walk's
// marks are of one kind: a timestamp and a number have no order.
func MarkKind(m string) string {
	switch {
	case m == "":
		return ""
	case isTime(m):
		return "timestamp"
	}
	return "number"
}

func isTime(m string) bool { _, ok := ParseTime(m); return ok }

// MaxMark returns the greater of two marks.
func MaxMark(a, b string) string {
	if CompareMarks(a, b) >= 0 {
		return a
	}
	return b
}

// SubtractOverlap moves a mark back by overlap: a duration for timestamps,
// a number (or a duration's seconds; milliseconds for an integer mark of 13
// digits or more) for numeric marks. A timestamp keeps
// the form of mark (offset and fractional digits). An empty overlap or
// mark returns the mark unchanged.
func SubtractOverlap(mark, overlap string) (string, error) {
	if mark == "" || overlap == "" {
		return mark, nil
	}
	if t, ok := ParseTime(mark); ok {
		d, err := time.ParseDuration(overlap)
		if err != nil {
			return "", fmt.Errorf("overlap %q must be a duration for timestamp marks", overlap)
		}
		m := t.Add(-d)
		// RFC 3339 writes no year before 0000 in the mark's own zone (the
		// form FormatLike keeps): stop at that zone's first instant, which is
		// never later than the mark itself.
		if floor := time.Date(0, 1, 1, 0, 0, 0, 0, t.Location()); m.Before(floor) {
			m = floor
		}
		return FormatLike(m, mark), nil
	}
	m, ok := new(big.Rat).SetString(mark)
	if !ok {
		return "", fmt.Errorf("mark %q is neither a timestamp nor a number", mark)
	}
	o, ok := new(big.Rat).SetString(overlap)
	if !ok {
		d, err := time.ParseDuration(overlap)
		if err != nil {
			return "", fmt.Errorf("overlap %q must be a number or a duration", overlap)
		}
		o = new(big.Rat).SetFloat64(d.Seconds())
		if len(mark) >= 13 && strings.Trim(mark, "0123456789") == "" {
			// 13 digits and more is a Unix time in milliseconds, as windows
			// and end_param read it: the duration is that many of them.
			o = new(big.Rat).SetInt64(d.Milliseconds())
		}
	}
	r := new(big.Rat).Sub(m, o)
	out := r.FloatString(9)
	if r.IsInt() {
		out = r.Num().String()
	}
	if !IsDecimal(out) {
		// 1e2000 is a mark, but written out exactly minus the overlap it
		// has more digits than a mark may: refuse rather than send a mark
		// that was not moved back.
		return "", fmt.Errorf("mark %q is too large to move back by overlap %q exactly", Elide(mark, 40), overlap)
	}
	return out, nil
}

// CheckOverlap checks an overlap (incremental.overlap, pagination.overlap):
// a duration for any marks, or a decimal number for numeric marks. initial
// and format are the job's: when either says the marks are timestamps (an
// initial timestamp; a format that writes timestamps), a number is refused
// here rather than when a run first starts from a saved mark.
func CheckOverlap(s, initial, format string) error {
	if s == "" {
		return nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return fmt.Errorf("must not be negative")
		}
		return nil
	}
	if !IsDecimal(s) {
		return fmt.Errorf("%q must be a duration (10m, 1h) or, for numeric marks, a decimal number (5, 0.5)", Elide(s, 40))
	}
	if r, _ := new(big.Rat).SetString(s); r.Sign() < 0 {
		return fmt.Errorf("must not be negative")
	}
	if _, ok := ParseTime(strings.TrimSpace(initial)); ok {
		return fmt.Errorf("%q is a number, but initial is a timestamp: give a duration (10m, 1h)", Elide(s, 40))
	}
	switch format {
	case "", FormatAsReceived, FormatUnix, FormatUnixMS:
		return nil
	}
	return fmt.Errorf("%q is a number, but format %s writes timestamps: give a duration (10m, 1h)", Elide(s, 40), format)
}

// ParseTime parses RFC 3339 timestamps with any offset.
func ParseTime(s string) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

const DefaultMaxFuture = time.Hour // incremental.max_future, pagination.max_future (hwm)
