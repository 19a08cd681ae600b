package sqlite

import (
	"fmt"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// columnType is how SQLite stores one idemsync column type: the one place
// a column type is described for this database (see Sink for the mapping).
type columnType struct {
	// decl is the declared type in CREATE TABLE and ADD COLUMN; it sets
	// the column's affinity.
	decl string
	// value converts an engine value to the stored one; false when v has
	// a Go type the column cannot take.
	value func(v any) (any, bool)
	// order compares an engine value with a stored one, for the version
	// guard.
	order compare
	// keyText, when set, is the one text form of a key value: what a
	// key column that keeps text is bound with, and what stored keys an
	// earlier version wrote differently are rewritten to. False leaves
	// text it cannot parse as it is.
	keyText func(s string) (string, bool)
	// earlier, when set, is a cheap SQL condition (fmt verb %[1]s: the
	// quoted column) true of stored key values that may be in a form an
	// earlier version wrote and keyText rewrites.
	earlier string
}

// columnTypes is the table of column types; a new column type is one entry
// here.
var columnTypes = map[contract.ColumnType]columnType{
	contract.TypeText: {decl: "TEXT", value: textValue, order: compareTexts},
	contract.TypeInteger: {decl: "INTEGER", order: compareNumbers,
		value: func(v any) (any, bool) { return asIs[int64](v, sqlkit.AsInt64) }},
	contract.TypeReal: {decl: "REAL", order: compareNumbers,
		value: func(v any) (any, bool) { return asIs[float64](v, sqlkit.AsFloat64) }},
	// Exact decimal text: NUMERIC affinity would turn it into a REAL or
	// INTEGER and lose digits.
	contract.TypeNumeric: {decl: "TEXT", value: numericValue, order: compareNumbers, keyText: numericKeyText,
		earlier: "typeof(%[1]s) = 'text' AND (%[1]s GLOB '*[^0-9.-]*' OR %[1]s GLOB '?*-*' OR %[1]s GLOB '*.*.*'" +
			" OR %[1]s GLOB '*.*0' OR %[1]s GLOB '*.' OR %[1]s GLOB '0[0-9]*' OR %[1]s GLOB '-0[0-9]*'" +
			" OR %[1]s GLOB '.*' OR %[1]s GLOB '-.*' OR %[1]s = '-0')"},
	contract.TypeBoolean: {decl: "INTEGER", value: booleanValue, order: compareNumbers},
	// Earlier versions wrote as few fractional digits as needed.
	contract.TypeTimestamp: {decl: "TEXT", value: timestampValue, order: compareTimes, keyText: timestampKeyText,
		earlier: "typeof(%[1]s) = 'text' AND length(%[1]s) <> 30"},
	contract.TypeJSON: {decl: "TEXT", order: compareTexts,
		value: jsonValue},
}

// typeOf returns the entry of t in columnTypes; an unknown type (which
// sqlkit.CheckTable rejects before any SQL is built) is stored as text.
func typeOf(t contract.ColumnType) columnType {
	if ct, ok := columnTypes[t]; ok {
		return ct
	}
	return columnTypes[contract.TypeText]
}

// sqliteType maps a column type to its declared SQLite type.
func sqliteType(t contract.ColumnType) string { return typeOf(t).decl }

// sqliteValue converts an engine value to what the SQLite column stores
// (nil is NULL). It fails with sqlkit.ValueError when v does not fit.
func sqliteValue(c *contract.Column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if out, ok := typeOf(c.Type).value(v); ok {
		return out, nil
	}
	return nil, sqlkit.ValueError(c, v)
}

// earlierKeyForms returns, for a key column of type typ, a condition true
// of the stored values that may be in an earlier form and need
// sqliteKeyFormFunc (the type's earlier entry with col filled in), or ""
// when the type has none. The condition is cheap (no function call) so
// that a table already in the current form is checked quickly.
func earlierKeyForms(typ contract.ColumnType, col string) string {
	if e := typeOf(typ).earlier; e != "" {
		return fmt.Sprintf(e, col)
	}
	return ""
}

// asIs returns v itself when it is already a T, and conv's T otherwise:
// boxing the same value again in a new interface is an allocation per
// value (docs/performance.md, "Round four").
func asIs[T any](v any, conv func(any) (T, bool)) (any, bool) {
	if _, ok := v.(T); ok {
		return v, true
	}
	return conv(v)
}

// textValue and numericValue return the string as it was given, boxed
// once (asIs).
func textValue(v any) (any, bool) {
	if _, ok := v.(string); ok {
		return v, true
	}
	return nil, false
}

func numericValue(v any) (any, bool) {
	if s, ok := v.(string); ok {
		if sqlkit.IsDecimal(s) {
			return v, true
		}
	}
	return nil, false
}

// jsonValue is compact JSON text; a string already compact is returned as
// given, boxed once (asIs).
func jsonValue(v any) (any, bool) {
	s, ok := sqlkit.CompactJSON(v)
	if !ok {
		return nil, false
	}
	if given, isText := v.(string); isText && len(given) == len(s) {
		return v, true
	}
	return s, true
}

func booleanValue(v any) (any, bool) {
	b, ok := v.(bool)
	if !ok {
		return nil, false
	}
	if b {
		return int64(1), true
	}
	return int64(0), true
}

func timestampValue(v any) (any, bool) {
	tm, ok := v.(time.Time)
	if !ok {
		return nil, false
	}
	return formatTime(tm), true
}

// numericKeyText is canonical decimal text ("1.00" and "1e0" are "1").
func numericKeyText(s string) (string, bool) {
	d, ok := sqlkit.ParseDecimal(s)
	if !ok {
		return "", false
	}
	return canonicalDecimal(d), true
}

// timestampKeyText is the stored timestamp form (nine fractional digits).
func timestampKeyText(s string) (string, bool) {
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return "", false
	}
	return formatTime(ts), true
}

// sqliteTimeLayout is the one form the SQLite sink stores timestamps in:
// UTC, RFC 3339 with always nine fractional digits, so that text order is
// time order.
const sqliteTimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// formatTime renders a timestamp the way the SQLite sink stores it
// (sqliteTimeLayout), e.g. 2024-05-01T12:00:00.500000000Z. Years of four
// digits, every timestamp an API sends, are written digit by digit: the
// layout's general formatter was 1.7% of a first load's CPU
// (docs/performance.md, "Round five"); any other year by the layout.
func formatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(sqliteTimeLayout)
	}
	hour, minute, sec := t.Clock()
	var b [len("2006-01-02T15:04:05.000000000Z")]byte
	digits(b[0:4], year)
	b[4] = '-'
	digits(b[5:7], int(month))
	b[7] = '-'
	digits(b[8:10], day)
	b[10] = 'T'
	digits(b[11:13], hour)
	b[13] = ':'
	digits(b[14:16], minute)
	b[16] = ':'
	digits(b[17:19], sec)
	b[19] = '.'
	digits(b[20:29], t.Nanosecond())
	b[29] = 'Z'
	return string(b[:])
}

// digits writes n, zero-padded, into all of b.
func digits(b []byte, n int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
}
