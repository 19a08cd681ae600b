package spec

import "github.com/tidwall/gjson"

// Tombstone is target.tombstone: a record whose Field holds Value is
// deleted (hard) or marked (soft) in its page's own write.
type Tombstone struct {
	Field string `yaml:"field" json:"field" jsonschema:"required"`
	// Value is compared with the field's JSON value: a boolean, a number
	// or a string, as written in the job file.
	Value any `yaml:"value" json:"value" jsonschema:"required"`
}

// Matches reports whether rec's Field holds Value (a bool matches a JSON
// boolean, a number a JSON number of equal value, a string a JSON string
// of equal text).
func (tb *Tombstone) Matches(rec gjson.Result) bool {
	if tb == nil {
		return false
	}
	v := rec.Get(tb.Field)
	switch want := tb.Value.(type) {
	case bool:
		return v.Type == gjson.True && want || v.Type == gjson.False && !want
	case string:
		return v.Type == gjson.String && v.Str == want
	case int:
		return v.Type == gjson.Number && v.Num == float64(want)
	case int64:
		return v.Type == gjson.Number && v.Num == float64(want)
	case float64:
		return v.Type == gjson.Number && v.Num == want
	case nil:
		return v.Type == gjson.Null && v.Exists()
	}
	return false
}
