// Package infer is the one column-type inference of idemsync: `idemsync
// init` proposes its columns with it, and a job without target.columns
// types and widens its columns with it (docs/job-file.md, "Without
// columns"). It imports nothing of the project's own, so that both the
// commands and the engine can.
//
// The types form a lattice, from narrowest to widest:
//
//	integer → numeric → text → json
//	boolean → text;  real → text;  timestamp → text
//
// A null or missing value says nothing (it fits every type). Join gives the
// narrowest type holding the values of two types: integer and numeric are
// numeric; two other scalar types are text; json holds any value, as JSON.
// Type names are those of target.columns.
package infer

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// The column types, as target.columns names them.
const (
	Integer   = "integer"
	Numeric   = "numeric"
	Real      = "real"
	Boolean   = "boolean"
	Timestamp = "timestamp"
	Text      = "text"
	JSON      = "json"
)

// Of is the narrowest type of one JSON value: integer for an integral
// number within 64 bits written without a fraction or exponent, numeric for
// any other number (exact) but text for one beyond an exact decimal's
// bounds (exactNumber), boolean, text for a string, json for an object
// or array, and "" for null or a missing value. Strings are text whatever
// they hold (a timestamp or a number in a string is the source's text).
func Of(v gjson.Result) string {
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return ""
	case v.Type == gjson.True || v.Type == gjson.False:
		return Boolean
	case v.Type == gjson.Number:
		if _, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
			return Integer
		}
		if !exactNumber(v.Raw) {
			return Text
		}
		return Numeric
	case v.Type == gjson.String:
		return Text
	}
	return JSON
}

// exactNumber reports whether a JSON number is within the bounds of an
// exact decimal (paging.IsDecimal: at most 1000 characters, an exponent
// of at most 4 digits, within what PostgreSQL's numeric stores). Beyond
// them only text keeps it as written: typed numeric, it was a bad record
// on every run.
func exactNumber(raw string) bool {
	if len(raw) > 1000 {
		return false
	}
	if i := strings.IndexAny(raw, "eE"); i >= 0 {
		return len(strings.TrimLeft(raw[i+1:], "+-")) <= 4
	}
	return true
}

// Join is the narrowest type holding every value of types a and b ("" is
// the type of null: Join("", b) is b).
func Join(a, b string) string {
	switch {
	case a == "" || a == b:
		return b
	case b == "":
		return a
	case a == JSON || b == JSON:
		return JSON
	case isNumber(a) && isNumber(b):
		if a == Real || b == Real {
			return Real // a real column takes any number
		}
		return Numeric
	}
	return Text
}

// isNumber reports whether t holds numbers only.
func isNumber(t string) bool { return t == Integer || t == Numeric || t == Real }

// Fields returns the top-level fields of the records, in the order they
// first appear, and for each the Join of its values in every record ("" for
// a field that is null wherever it appears). Records that are not objects
// are ignored.
func Fields(recs []gjson.Result) (names []string, types map[string]string) {
	types = map[string]string{}
	for _, r := range recs {
		if !r.IsObject() {
			continue
		}
		r.ForEach(func(k, v gjson.Result) bool {
			name := k.String()
			t, seen := types[name]
			if !seen {
				names = append(names, name)
			}
			types[name] = Join(t, Of(v))
			return true
		})
	}
	return names, types
}
