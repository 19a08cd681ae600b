package sqlkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// ValueError reports a Go value that does not fit its column. The engine
// converts records before they reach a sink, so this is a bug or a
// mismatched table, not a bad record: the page fails permanently.
func ValueError(c *contract.Column, v any) error {
	return contract.Errorf(contract.Permanent, "column %q: cannot store %T as %s", c.Name, v, c.Type)
}

// AsInt64 accepts the Go integer types the engine may hand over.
func AsInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	}
	return 0, false
}

// AsFloat64 accepts Go floats and integers.
func AsFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	if i, ok := AsInt64(v); ok {
		return float64(i), true
	}
	return 0, false
}

// AsJSON accepts JSON text as a string, []byte or json.RawMessage and returns
// it as a string after checking it is valid JSON.
func AsJSON(v any) (string, bool) {
	s, ok := jsonText(v)
	return s, ok && json.Valid([]byte(s))
}

// jsonText returns v as text when it is a string, []byte or
// json.RawMessage, unchecked.
func jsonText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	case json.RawMessage:
		return string(x), true
	}
	return "", false
}

// Decimal is an exact decimal number: Int × 10^Exp.
type Decimal struct {
	Int *big.Int
	Exp int32
}

// Limits of an exact decimal, PostgreSQL's numeric ones: digits before and
// after the decimal point.
const (
	maxIntDigits  = 131072
	maxFracDigits = 16383
)

// ParseDecimal parses an exact decimal such as "-12.50", "1e-3" or
// "12345678901234567890.123456789" without going through float64. The
// scale is kept: "12.50" is 1250×10^-2. It returns false on anything else,
// and on numbers beyond maxIntDigits or maxFracDigits.
func ParseDecimal(s string) (Decimal, bool) {
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(s[i+1:], 10, 32)
		if err != nil {
			return Decimal{}, false
		}
		mant, exp = s[:i], e
	}
	sign := ""
	if mant != "" && (mant[0] == '-' || mant[0] == '+') {
		sign, mant = mant[:1], mant[1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" && frac == "" {
		return Decimal{}, false
	}
	digits := intPart + frac
	for _, r := range digits {
		if r < '0' || r > '9' {
			return Decimal{}, false
		}
	}
	n, ok := new(big.Int).SetString(sign+digits, 10)
	if !ok {
		return Decimal{}, false
	}
	exp -= int64(len(frac))
	// PostgreSQL's numeric limits; they also keep rat() from building
	// astronomically large integers for inputs such as "1e2000000000".
	if exp < -maxFracDigits || int64(len(digits))+exp > maxIntDigits {
		return Decimal{}, false
	}
	return Decimal{Int: n, Exp: int32(exp)}, true
}

// rat returns d as an exact rational, for comparisons.
func (d Decimal) Rat() *big.Rat {
	r := new(big.Rat).SetInt(d.Int)
	if d.Exp == 0 {
		return r
	}
	e := Exp10(d.Exp)
	if d.Exp > 0 {
		return r.Mul(r, new(big.Rat).SetInt(e))
	}
	return r.Quo(r, new(big.Rat).SetInt(e))
}

func Exp10(e int32) *big.Int {
	if e < 0 {
		e = -e
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(e)), nil)
}

// CompactJSON accepts JSON text as AsJSON does and returns it without
// insignificant whitespace, checking it is valid JSON on the way.
func CompactJSON(v any) (string, bool) {
	s, ok := jsonText(v)
	if !ok {
		return "", false
	}
	b := bytes.NewBuffer(make([]byte, 0, len(s)))
	if err := json.Compact(b, []byte(s)); err != nil {
		return "", false
	}
	if b.Len() == len(s) {
		return s, true // already compact
	}
	return b.String(), true
}

// KeyForm maps key values that a database holds equal to one Go value,
// for CanonicalKeys. Values it does not know are returned as they are.
type KeyForm func(v any) any

// CanonicalKeys returns the rows to write for one page: contract.Dedupe's
// result, except that key values equal in the database but different in Go
// (numeric "1.0" and "1", timestamps in different zones, -0 and 0) count as
// the same key. form returns the KeyForm of a column type, nil where Go's
// equality is the database's. PostgreSQL would otherwise refuse the page
// ("ON CONFLICT DO UPDATE command cannot affect row a second time").
func CanonicalKeys(t *contract.Table, rows []contract.Row, form func(contract.ColumnType) KeyForm) ([]contract.Row, int) {
	keyIdx := make([]int, 0, len(t.Key))
	forms := make([]KeyForm, 0, len(t.Key))
	needed := false
	for i, c := range t.Columns {
		for _, k := range t.Key {
			if c.Name == k {
				f := form(c.Type)
				keyIdx, forms = append(keyIdx, i), append(forms, f)
				needed = needed || f != nil
			}
		}
	}
	if !needed {
		return contract.Dedupe(t, rows)
	}
	shadow := make([]contract.Row, len(rows))
	for i, r := range rows {
		vals := make([]any, len(r.Values))
		copy(vals, r.Values)
		for n, j := range keyIdx {
			if forms[n] != nil {
				vals[j] = forms[n](vals[j])
			}
		}
		shadow[i] = contract.Row{Values: vals, Hash: strconv.Itoa(i)}
	}
	kept, dropped := contract.Dedupe(t, shadow)
	if dropped == 0 {
		return rows, 0
	}
	out := make([]contract.Row, len(kept))
	for i, k := range kept {
		j, _ := strconv.Atoi(k.Hash)
		out[i] = rows[j]
	}
	return out, dropped
}

// NumericKey is the KeyForm of exact decimals: "1.0", "1" and "1e0" are
// one value.
func NumericKey(v any) any {
	if s, ok := v.(string); ok {
		if d, ok := ParseDecimal(s); ok {
			return "n:" + d.Rat().RatString()
		}
	}
	return v
}

// TimeKey is the KeyForm of timestamps: one instant in any zone is one
// value.
func TimeKey(v any) any {
	if tm, ok := v.(time.Time); ok {
		return tm.UTC().Round(0)
	}
	return v
}

// RealKey is the KeyForm of floats: -0 and 0 are one value.
func RealKey(v any) any {
	if f, ok := AsFloat64(v); ok && f == 0 {
		return float64(0)
	}
	return v
}

// Compare orders an engine value a against a stored value b: negative,
// zero or positive. It fails when the two cannot be compared.
type Compare func(a, b any) (int, error)

// VersionNewer reports whether a row whose version is next may overwrite a
// stored row whose version is stored: true when stored is NULL, false when
// next is NULL (and stored is not), otherwise next >= stored by cmp, the
// Compare of the column's type. stored comes from the database (SQLite
// storage classes); next from the engine. It fails when the two cannot be
// compared.
func VersionNewer(c *contract.Column, cmp Compare, next, stored any) (bool, error) {
	if stored == nil {
		return true, nil
	}
	if next == nil {
		return false, nil
	}
	n, err := cmp(next, stored)
	if err != nil {
		return false, fmt.Errorf("compare version column %q: %w", c.Name, err)
	}
	return n >= 0, nil
}

// CompareNumbers is the Compare of numbers and booleans: by exact value,
// whether each is an integer, a float, decimal text or a bool (true is 1).
func CompareNumbers(a, b any) (int, error) {
	ra, err := toRat(a)
	if err != nil {
		return 0, err
	}
	rb, err := toRat(b)
	if err != nil {
		return 0, err
	}
	return ra.Cmp(rb), nil
}

// CompareTimes is the Compare of timestamps: by instant, each a time.Time
// or RFC 3339 text.
func CompareTimes(a, b any) (int, error) {
	ta, err := toTime(a)
	if err != nil {
		return 0, err
	}
	tb, err := toTime(b)
	if err != nil {
		return 0, err
	}
	return ta.Compare(tb), nil
}

// CompareTexts is the Compare of text: by bytes, any value rendered by
// ToText. It never fails.
func CompareTexts(a, b any) (int, error) {
	return strings.Compare(ToText(a), ToText(b)), nil
}

func toRat(v any) (*big.Rat, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return big.NewRat(1, 1), nil
		}
		return new(big.Rat), nil
	case string:
		if d, ok := ParseDecimal(x); ok {
			return d.Rat(), nil
		}
		return nil, fmt.Errorf("%q is not a number", x)
	case []byte:
		return toRat(string(x))
	}
	if i, ok := AsInt64(v); ok {
		return new(big.Rat).SetInt64(i), nil
	}
	if f, ok := AsFloat64(v); ok {
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
		if !ok {
			return nil, fmt.Errorf("%v is not a finite number", f)
		}
		return r, nil
	}
	return nil, fmt.Errorf("%T is not a number", v)
}

func toTime(v any) (time.Time, error) {
	switch x := v.(type) {
	case time.Time:
		return x, nil
	case string:
		return time.Parse(time.RFC3339Nano, x)
	case []byte:
		return time.Parse(time.RFC3339Nano, string(x))
	}
	return time.Time{}, fmt.Errorf("%T is not a timestamp", v)
}

// ToText renders a stored value as text: strings and bytes as they are,
// anything else with fmt.Sprint.
func ToText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}
