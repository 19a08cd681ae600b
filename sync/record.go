package sync

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/infer"
	"github.com/idemsync/idemsync/internal/jsontext"
	"github.com/idemsync/idemsync/sync/paging"
)

// Mapper converts records to rows of a table. With Infer set, InferPage
// adds and widens the table's columns before a page is mapped.
type Mapper struct {
	Table *contract.Table
	Infer bool
	// Parent is the parent row of a child resource's page (a JSON object
	// of the parent's columns): columns with Column.Parent take its values.
	Parent gjson.Result
	// The schema contract's switches (checkSchema, docs/job-file.md "The
	// schema contract"); all false is evolve and widen. NoNewColumns:
	// InferPage adds no column; NoWiden: it widens none; NullMisfits: Map
	// stores NULL for a value its column cannot take (not a key's).
	NoNewColumns, NoWiden, NullMisfits bool
	buf                                []byte
	plan                               *fieldPlan                       // built for the table's columns (fields.go)
	kids                               map[*contract.Table]*elementPlan // by child table (children.go)
	slab                               []any                            // where the next rows' values are carved from (values)
}

// slabRows is how many rows' values one block holds.
const slabRows = 256

// values returns n values for one row, carved from a block shared with
// the rows mapped before and after it rather than allocated alone: one
// allocation every slabRows rows instead of one a row (docs/performance.md,
// "Round four"). The slice's capacity is its length, so a row that grows
// (PadRows) is copied, never spills into the next row's values.
func (m *Mapper) values(n int) []any {
	if len(m.slab) < n {
		m.slab = make([]any, n*slabRows)
	}
	v := m.slab[:n:n]
	m.slab = m.slab[n:]
	return v
}

// Map converts one record. It returns the row, or a *BadRecord.
func (m *Mapper) Map(index int, rec gjson.Result) (contract.Row, error) {
	if m.Infer && !rec.IsObject() {
		return contract.Row{}, &contract.BadRecord{Index: index, Reason: "record is not a JSON object"}
	}
	t := m.Table
	row := contract.Row{Values: m.values(len(t.Columns))}
	var hashed []any // the values hashed, when a widened column hashes one as before
	if m.plan == nil || m.plan.ncols != len(t.Columns) {
		m.plan = newFieldPlan(t) // InferPage may have added columns
	}
	vals := m.plan.read(rec, t.Columns)
	for i, c := range t.Columns {
		v := vals[i]
		if c.Parent != "" {
			v = m.parentValue(c)
		}
		val, err := Convert(v, c.Type)
		if err != nil && m.NullMisfits && !keyOrVersion(t, c.Name) {
			val, err = nil, nil // discard_value: checkSchema dead-letters the record with the reason
		}
		if err != nil {
			return contract.Row{}, &contract.BadRecord{Index: index, Column: c.Name, Reason: err.Error()}
		}
		row.Values[i] = val
		if h, ok := wasValue(c, v); ok {
			if hashed == nil {
				hashed = append([]any(nil), row.Values...)
			}
			hashed[i] = h
		} else if hashed != nil {
			hashed[i] = val
		}
	}
	for _, k := range t.Key {
		for i, c := range t.Columns {
			if c.Name == k && row.Values[i] == nil {
				return contract.Row{}, &contract.BadRecord{Index: index, Column: k, Reason: fmt.Sprintf("key is missing or null (path %s)", c.Path)}
			}
		}
	}
	if m.Infer {
		for _, k := range t.Key {
			if t.Column(k) == nil {
				return contract.Row{}, &contract.BadRecord{Index: index, Column: k, Reason: "key is missing or null"}
			}
		}
	}
	if hashed == nil {
		hashed = row.Values
	}
	row.Hash = m.hash(hashed)
	if len(t.Children) > 0 { // children.go
		if err := m.mapChildren(index, rec, &row); err != nil {
			return contract.Row{}, err
		}
	}
	return row, nil
}

// wasValue is, for a column widened from Column.Was, value v converted to
// the type it had before when v is of that type: the content hash of a
// row the widening did not change stays what it was, so a re-sync finds it
// unchanged (docs/job-file.md, "Without columns").
func wasValue(c contract.Column, v gjson.Result) (any, bool) {
	if c.Was == "" || infer.Join(string(c.Was), infer.Of(v)) != string(c.Was) {
		return nil, false
	}
	val, err := Convert(v, c.Was)
	return val, err == nil
}

// PadRows extends rows mapped before columns were added with NULLs.
func PadRows(t *contract.Table, rows []contract.Row) {
	for i := range rows {
		for len(rows[i].Values) < len(t.Columns) {
			rows[i].Values = append(rows[i].Values, nil)
		}
	}
}

// InferPage adds a column for each new top-level field of the page's
// records that holds a non-null value, typed by infer.Fields over the whole
// page, and widens an inferred column that a value of the page does not
// fit to the join of its type and the value's (infer.Join), recording the
// type it had first in Column.Was. Key and version columns are never
// widened: a value they cannot take stays a bad record. Records that are
// bad for their key (not an object, a key missing, null or not of its
// column's type) are dead letters or fail the page: they type nothing. It
// reports whether the table's columns changed (docs/job-file.md, "Without
// columns").
func (m *Mapper) InferPage(recs []gjson.Result) bool {
	t := m.Table
	recs = slices.DeleteFunc(slices.Clone(recs), func(r gjson.Result) bool { return !m.keyFits(r) })
	changed := false
	for i := range t.Columns {
		c := &t.Columns[i]
		if keyOrVersion(t, c.Name) || m.NoWiden {
			continue
		}
		typ := string(c.Type)
		for _, r := range recs {
			v := r.Get(c.Path)
			if _, err := Convert(v, contract.ColumnType(typ)); err != nil {
				typ = infer.Join(typ, infer.Of(v))
			}
		}
		if typ != string(c.Type) && contract.ColumnType(typ).Valid() {
			if c.Was == "" {
				c.Was = c.Type
			}
			c.Type, changed = contract.ColumnType(typ), true
		}
	}
	if m.NoNewColumns {
		return changed
	}
	names, types := infer.Fields(recs)
	for _, name := range names {
		if types[name] == "" || t.Column(name) != nil || strings.HasPrefix(name, "_idemsync_") || name == "" {
			continue
		}
		t.Columns = append(t.Columns, contract.Column{Name: name, Path: EscapePath(name), Type: contract.ColumnType(types[name])})
		changed = true
	}
	return changed
}

// keyFits reports whether record r is an object whose key values are all
// present, non-null and of their column's type when the column exists.
func (m *Mapper) keyFits(r gjson.Result) bool {
	if !r.IsObject() {
		return false
	}
	for _, k := range m.Table.Key {
		path, typ := EscapePath(k), contract.ColumnType("")
		if c := m.Table.Column(k); c != nil {
			path, typ = c.Path, c.Type
		}
		v := r.Get(path)
		if !v.Exists() || v.Type == gjson.Null {
			return false
		}
		if typ != "" {
			if _, err := Convert(v, typ); err != nil {
				return false
			}
		}
	}
	return true
}

// keyOrVersion reports whether name is a key column of t or its
// version column.
func keyOrVersion(t *contract.Table, name string) bool {
	return name == t.Version || slices.Contains(t.Key, name)
}

// EscapePath escapes a field name for use as a GJSON path.
func EscapePath(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch r {
		case '.', '*', '?', '|', '#', '@', '\\', '!', '=', '<', '>', '%', '"', ',', ':', '[', ']', '{', '}', '(', ')':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Convert turns a JSON value into the Go value of a column type (see
// ColumnType). A missing or null value is nil. It returns an error saying why
// a value cannot be converted.
func Convert(v gjson.Result, t contract.ColumnType) (any, error) {
	if !v.Exists() || v.Type == gjson.Null {
		return nil, nil
	}
	switch t {
	case contract.TypeText:
		if v.Type == gjson.String {
			return convertString(v)
		}
		return v.Raw, nil
	case contract.TypeInteger:
		return convertInteger(v)
	case contract.TypeReal:
		return convertReal(v)
	case contract.TypeNumeric:
		return convertNumeric(v)
	case contract.TypeBoolean:
		return convertBoolean(v)
	case contract.TypeTimestamp:
		return convertTimestamp(v)
	case contract.TypeJSON:
		return v.Raw, nil
	}
	return nil, fmt.Errorf("unknown column type %q", t)
}

// convertString is a JSON string's characters. A string holding the
// escape of a lone UTF-16 surrogate (\ud800) has no UTF-8 form: decoded, it
// was U+FFFD and the escape after it was lost, so two different strings
// were one value (docs/job-file.md, "Columns").
func convertString(v gjson.Result) (any, error) {
	if strings.Contains(v.Raw, `\u`) {
		if err := jsontext.Surrogates(v.Raw); err != nil {
			return nil, fmt.Errorf("want text, got a string holding %v, which has no UTF-8 form (a json column keeps it as written)", err)
		}
	}
	return v.Str, nil
}

// numberText is the text of a JSON number, or of a string holding one
// (trimmed); any other JSON type fails with "want WANT".
func numberText(v gjson.Result, want string) (string, error) {
	if v.Type == gjson.String {
		return strings.TrimSpace(v.Str), nil
	} else if v.Type != gjson.Number {
		return "", fmt.Errorf("want %s, got %s", want, describe(v))
	}
	return v.Raw, nil
}

// convertInteger converts a number or decimal string with an integral
// value (1, "2", 3.0, 4e2) that fits in 64 bits.
func convertInteger(v gjson.Result) (any, error) {
	s, err := numberText(v, "an integer")
	if err != nil {
		return nil, err
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if !paging.IsDecimal(s) { // big.Rat also reads "0x10", "4/2", "0b11" and "1_000"
		return nil, fmt.Errorf("want a 64-bit integer, got %s", describe(v))
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return nil, fmt.Errorf("want a 64-bit integer, got %s", describe(v))
	}
	return r.Num().Int64(), nil
}

// convertReal converts a number or decimal string to a finite float64.
func convertReal(v gjson.Result) (any, error) {
	s, err := numberText(v, "a number")
	if err != nil {
		return nil, err
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || !paging.IsDecimal(s) { // ParseFloat also reads "0x1p4" and "1_000"
		return nil, fmt.Errorf("want a number, got %s", describe(v))
	}
	return f, nil
}

// convertNumeric keeps a decimal number (see isDecimal) as its text.
func convertNumeric(v gjson.Result) (any, error) {
	s, err := numberText(v, "a decimal number")
	if err != nil {
		return nil, err
	}
	if !paging.IsDecimal(s) {
		return nil, fmt.Errorf("want a decimal number, got %s", describe(v))
	}
	return s, nil
}

// convertBoolean converts true and false, the strings strconv.ParseBool
// reads, and the numbers 0 and 1.
func convertBoolean(v gjson.Result) (any, error) {
	switch {
	case v.Type == gjson.True:
		return true, nil
	case v.Type == gjson.False:
		return false, nil
	case v.Type == gjson.String:
		if b, err := strconv.ParseBool(strings.TrimSpace(v.Str)); err == nil {
			return b, nil
		}
	case v.Raw == "0" || v.Raw == "1":
		return v.Raw == "1", nil
	}
	return nil, fmt.Errorf("want a boolean, got %s", describe(v))
}

// convertTimestamp converts a string holding an RFC 3339 timestamp (or a
// form parseTime reads) or a date, in UTC.
func convertTimestamp(v gjson.Result) (any, error) {
	if v.Type == gjson.String {
		s := strings.TrimSpace(v.Str)
		if ts, ok := paging.ParseTime(s); ok {
			return ts.UTC(), nil
		}
		if d, err := time.Parse(time.DateOnly, s); err == nil {
			return d.UTC(), nil
		}
	}
	return nil, fmt.Errorf("want an RFC 3339 timestamp, got %s", describe(v))
}

func describe(v gjson.Result) string {
	kind := "a string"
	switch {
	case v.Type == gjson.Number:
		kind = "a number"
	case v.Type == gjson.True || v.Type == gjson.False:
		kind = "a boolean"
	case v.IsArray():
		kind = "an array"
	case v.IsObject():
		kind = "an object"
	}
	return kind + " " + paging.Elide(v.Raw, 40)
}

// hash returns the content hash of a row: xxhash64 over the non-null values
// with their column names, so that adding a column that a record lacks does
// not change the hash of rows written before.
func (m *Mapper) hash(values []any) string {
	b := m.buf[:0]
	for i, v := range values {
		if v == nil {
			continue
		}
		b = append(b, m.Table.Columns[i].Name...)
		b = append(b, 0)
		switch x := v.(type) {
		case string:
			b = append(b, 's')
			b = binary.AppendUvarint(b, uint64(len(x)))
			b = append(b, x...)
		case int64:
			b = append(b, 'i')
			b = binary.AppendVarint(b, x)
		case float64:
			b = append(b, 'f')
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		case bool:
			if x {
				b = append(b, 'T')
			} else {
				b = append(b, 'F')
			}
		case time.Time:
			b = append(b, 't')
			b = x.UTC().AppendFormat(b, time.RFC3339Nano)
		}
		b = append(b, 0)
	}
	m.buf = b
	return strconv.FormatUint(xxhash.Sum64(b), 16)
}

// parentValue is the parent row's value of column c's Column.Parent: the
// parent table's text, or for a json column the JSON it holds.
func (m *Mapper) parentValue(c contract.Column) gjson.Result {
	v := m.Parent.Get(EscapePath(c.Parent))
	if c.Type == contract.TypeJSON && v.Type == gjson.String && gjson.Valid(v.Str) {
		return gjson.Parse(v.Str)
	}
	return v
}
