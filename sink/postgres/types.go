package postgres

import (
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5/pgtype"
)

// columnType is how PostgreSQL stores one idemsync column type: the one
// place a column type is described for this database (see Sink for the
// mapping).
type columnType struct {
	// decl is the type in CREATE TABLE and ADD COLUMN.
	decl string
	// binary is the type as format_type names it, when values of this
	// column type are sent in binary form (as array) to a column of that
	// type; "" sends them as text.
	binary string
	// value converts an engine value to what pgx encodes; false when v
	// has a Go type the column cannot take.
	value func(v any) (any, bool)
	// array builds the typed array of column j of data (value results)
	// sent for a binary column.
	array func(data [][]any, j int) any
	// wire appends a value's length and binary form in decl as pgx
	// encodes value(v), for a copied page (copyenc.go); false when v has a
	// Go type the column cannot take.
	wire func(buf []byte, v any) ([]byte, bool)
	// key maps key values PostgreSQL holds equal to one Go value; nil
	// where Go's equality is PostgreSQL's.
	key keyCanon
	// problem, when set, says why PostgreSQL cannot store text s in the
	// column ("" when it can), checked after UTF-8; nil refuses NUL
	// characters, as text does.
	problem func(s string) string
}

// columnTypes is the table of column types; a new column type is one entry
// here.
var columnTypes = map[contract.ColumnType]columnType{
	contract.TypeText: {decl: "text", binary: "text", array: ptrArray[string], wire: wireText,
		value: func(v any) (any, bool) { s, ok := v.(string); return s, ok }},
	contract.TypeInteger: {decl: "bigint", binary: "bigint", array: ptrArray[int64], wire: wireInt8,
		value: func(v any) (any, bool) { return sqlkit.AsInt64(v) }},
	contract.TypeReal: {decl: "double precision", binary: "double precision", array: ptrArray[float64], key: realKey, wire: wireFloat8,
		value: func(v any) (any, bool) { return sqlkit.AsFloat64(v) }},
	// Sent exactly: parsed from the decimal string, never through float64.
	contract.TypeNumeric: {decl: "numeric", binary: "numeric", array: valueArray[pgtype.Numeric], key: numericKey, wire: wireNumeric,
		value: numericValue},
	contract.TypeBoolean: {decl: "boolean", binary: "boolean", array: ptrArray[bool], wire: wireBool,
		value: func(v any) (any, bool) { b, ok := v.(bool); return b, ok }},
	contract.TypeTimestamp: {decl: "timestamptz", binary: "timestamp with time zone", array: ptrArray[time.Time], key: timeKey, wire: wireTimestamp,
		value: timestampValue},
	// Sent as text, parsed by jsonb.
	contract.TypeJSON: {decl: "jsonb", problem: jsonProblem, wire: wireJSONB,
		value: func(v any) (any, bool) { return sqlkit.AsJSON(v) }},
}

// typeOf returns the entry of t in columnTypes; an unknown type (which
// sqlkit.CheckTable rejects before any SQL is built) is stored as text.
func typeOf(t contract.ColumnType) columnType {
	if ct, ok := columnTypes[t]; ok {
		return ct
	}
	return columnTypes[contract.TypeText]
}

// pgType maps a column type to its PostgreSQL type.
func pgType(t contract.ColumnType) string { return typeOf(t).decl }

// keyForm is the keyCanon of a column type, for canonicalKeys.
func keyForm(t contract.ColumnType) keyCanon { return typeOf(t).key }

// binaryParam reports whether column c has, in the table, the type idemsync
// gives its column type (so its values can be sent in binary form).
func binaryParam(c *contract.Column, types map[string]string) bool {
	b := typeOf(c.Type).binary
	return b != "" && types[c.Name] == b
}

// binaryArray is column j of data (pageValues results) as a typed array.
func binaryArray(c *contract.Column, data [][]any, j int) any {
	return typeOf(c.Type).array(data, j)
}

// ptrArray is column j of data as []*T, nil where a value is not a T
// (NULL).
func ptrArray[T any](data [][]any, j int) any {
	out := make([]*T, len(data))
	for i, r := range data {
		if v, ok := r[j].(T); ok {
			out[i] = &v
		}
	}
	return out
}

// valueArray is column j of data as []T, the zero T (NULL for pgtype
// values) where a value is not a T.
func valueArray[T any](data [][]any, j int) any {
	out := make([]T, len(data))
	for i, r := range data {
		if v, ok := r[j].(T); ok {
			out[i] = v
		}
	}
	return out
}

func numericValue(v any) (any, bool) {
	if s, ok := v.(string); ok {
		if d, ok := sqlkit.ParseDecimal(s); ok {
			return pgtype.Numeric{Int: d.Int, Exp: d.Exp, Valid: true}, true
		}
	}
	return nil, false
}

func timestampValue(v any) (any, bool) {
	tm, ok := v.(time.Time)
	if !ok {
		return nil, false
	}
	return tm.UTC(), true
}
