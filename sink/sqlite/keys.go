package sqlite

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// SQLite column affinities (https://sqlite.org/datatype3.html §3.1): how a
// column converts the values stored into it.
const (
	affInteger = "INTEGER"
	affText    = "TEXT"
	affBlob    = "BLOB"
	affReal    = "REAL"
	affNumeric = "NUMERIC"
)

// affinity returns the affinity SQLite gives a column declared with decl,
// by SQLite's own rules, in their order.
func affinity(decl string) string {
	d := strings.ToUpper(decl)
	switch {
	case strings.Contains(d, "INT"):
		return affInteger
	case strings.Contains(d, "CHAR"), strings.Contains(d, "CLOB"), strings.Contains(d, "TEXT"):
		return affText
	case d == "", strings.Contains(d, "BLOB"):
		return affBlob
	case strings.Contains(d, "REAL"), strings.Contains(d, "FLOA"), strings.Contains(d, "DOUB"):
		return affReal
	}
	return affNumeric
}

// sqliteKeyValue returns the value to bind for a key column: v (an
// sqliteValue result) converted the way the column's affinity aff would
// convert it, so that one key has one bound form. A numeric column type in a
// column that keeps text gets canonical decimal text ("1.00" and "1e0" are
// "1"), since SQLite compares text by its characters where PostgreSQL
// compares numerics by value.
func sqliteKeyValue(typ contract.ColumnType, aff string, v any) any {
	var out any
	var ok bool
	switch aff {
	case affInteger, affNumeric:
		out, ok = numericKey(v)
	case affReal:
		out, ok = realKey(v)
	case affText:
		if x, isInt := v.(int64); isInt {
			return strconv.FormatInt(x, 10)
		}
		out, ok = textKey(typ, v)
	default: // BLOB: stored as bound; numbers compare by value
		out, ok = textKey(typ, v)
	}
	if ok {
		return out
	}
	if f, isFloat := v.(float64); isFloat && f == 0 {
		return float64(0) // -0 is 0
	}
	return v
}

// numericKey is a key value in an INTEGER or NUMERIC column: a
// well-formed number becomes an integer when it is one, a real otherwise;
// other text stays text (false).
func numericKey(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if d, ok := sqlkit.ParseDecimal(strings.TrimSpace(x)); ok {
			if i, ok := decimalInt64(d); ok {
				return i, true
			}
			if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && !math.IsInf(f, 0) {
				return f, true
			}
		}
	case float64:
		if i, ok := floatInt64(x); ok {
			return i, true
		}
	}
	return nil, false
}

// realKey is a key value in a REAL column: integers and numeric text
// become reals.
func realKey(v any) (any, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, true
		}
	}
	return nil, false
}

// textKey is a key value of text in a column that keeps it as text: the
// one text form of its column type, when it has one.
func textKey(typ contract.ColumnType, v any) (any, bool) {
	if s, ok := v.(string); ok {
		if out, ok := keyText(typ, s); ok {
			return out, true
		}
	}
	return nil, false
}

// keyText returns s in the one text form of its column type (see
// columnType.keyText); false when the type has none or s does not parse.
func keyText(typ contract.ColumnType, s string) (string, bool) {
	if f := typeOf(typ).keyText; f != nil {
		return f(s)
	}
	return "", false
}

// keyIdentity renders bound key values as one string, equal for values
// SQLite's unique index deems equal: integers and reals by numeric value,
// text by its bytes.
func keyIdentity(b *strings.Builder, vals []any) string {
	b.Reset()
	for _, v := range vals {
		switch x := v.(type) {
		case int64:
			b.WriteString("n:")
			b.WriteString(strconv.FormatInt(x, 10))
		case float64:
			b.WriteString("n:")
			if i, ok := floatInt64(x); ok {
				b.WriteString(strconv.FormatInt(i, 10))
			} else {
				b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
			}
		case string:
			b.WriteString("s:")
			b.WriteString(x)
		default:
			b.WriteString("?:")
			b.WriteString(sqlkit.ToText(v))
		}
		b.WriteByte(0)
	}
	return b.String()
}

// floatInt64 returns f as an int64 when it is integral and in range.
func floatInt64(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// decimalInt64 returns d as an int64 when it is integral and in range.
func decimalInt64(d sqlkit.Decimal) (int64, bool) {
	r := d.Rat()
	if !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// canonicalDecimal renders d in plain notation with no exponent, no leading
// zeros, no trailing fractional zeros and no sign on zero: "1.00" and "1e0"
// are "1", "-0.50" is "-0.5", "25e-1" is "2.5".
func canonicalDecimal(d sqlkit.Decimal) string {
	n, exp := new(big.Int).Set(d.Int), d.Exp
	if n.Sign() == 0 {
		return "0"
	}
	ten, rem := big.NewInt(10), new(big.Int)
	for exp < 0 {
		q, r := new(big.Int).QuoRem(n, ten, rem)
		if r.Sign() != 0 {
			break
		}
		n, exp = q, exp+1
	}
	if exp > 0 {
		n.Mul(n, sqlkit.Exp10(exp))
		exp = 0
	}
	digits := n.String()
	sign := ""
	if digits[0] == '-' {
		sign, digits = "-", digits[1:]
	}
	if exp == 0 {
		return sign + digits
	}
	frac := int(-exp)
	if len(digits) <= frac {
		digits = strings.Repeat("0", frac-len(digits)+1) + digits
	}
	return sign + digits[:len(digits)-frac] + "." + digits[len(digits)-frac:]
}
