package sqlkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

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
	sign, intPart, frac, exp, ok := splitDecimal(s)
	if !ok {
		return Decimal{}, false
	}
	n, ok := new(big.Int).SetString(sign+intPart+frac, 10)
	if !ok {
		return Decimal{}, false
	}
	return Decimal{Int: n, Exp: int32(exp)}, true
}

// IsDecimal reports whether ParseDecimal accepts s, without building the
// number (a check per value of a numeric column: docs/performance.md,
// "Round four").
func IsDecimal(s string) bool {
	_, _, _, _, ok := splitDecimal(s)
	return ok
}

// splitDecimal is ParseDecimal's reading of s: its sign, the digits of
// its integer and fractional parts (one or more in all, every one decimal)
// and the exponent of the last digit.
func splitDecimal(s string) (sign, intPart, frac string, exp int64, ok bool) {
	mant := s
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(s[i+1:], 10, 32)
		if err != nil {
			return "", "", "", 0, false
		}
		mant, exp = s[:i], e
	}
	if mant != "" && (mant[0] == '-' || mant[0] == '+') {
		sign, mant = mant[:1], mant[1:]
	}
	intPart, frac, _ = strings.Cut(mant, ".")
	if intPart == "" && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return "", "", "", 0, false
	}
	exp -= int64(len(frac))
	// PostgreSQL's numeric limits; they also keep rat() from building
	// astronomically large integers for inputs such as "1e2000000000".
	if exp < -maxFracDigits || int64(len(intPart)+len(frac))+exp > maxIntDigits {
		return "", "", "", 0, false
	}
	return sign, intPart, frac, exp, true
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Rat returns d as an exact rational, for comparisons.
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

// Exp10 is 10^|e|.
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
