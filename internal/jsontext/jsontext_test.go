package jsontext

import (
	"encoding/json"
	"testing"
)

// Text that encoding/json reads as U+FFFD is refused; every string that
// reads back as written passes.
func TestCheck(t *testing.T) {
	for _, ok := range []string{`{"k":"Müller"}`, `"x\ud83d\ude00"`, `"\u00e9\\u"`, `["a\"b",1]`, `{}`} {
		if err := Check([]byte(ok)); err != nil {
			t.Errorf("Check(%s) = %v", ok, err)
		}
	}
	for _, bad := range []string{"{\"k\":\"M\xfcller\"}", `"x\ud800"`, `"x\udbff"`, `"\udc00\ud800"`} {
		var s any
		if json.Unmarshal([]byte(bad), &s) != nil {
			t.Fatalf("%q does not decode: not the case this checks", bad)
		}
		if err := Check([]byte(bad)); err == nil {
			t.Errorf("Check(%q) passed: encoding/json reads it as %q", bad, s)
		}
	}
	if n := InvalidAt([]byte("ab\xffc")); n != 2 {
		t.Errorf("InvalidAt = %d, want 2", n)
	}
}

// A member named twice, at any depth, is refused (encoding/json would
// keep the last); the same name in two objects, or as a value, is not.
func TestDuplicates(t *testing.T) {
	for _, ok := range []string{`{}`, `[]`, `{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`, `{"a":"a","b":["a","a"]}`,
		`[{"a":1},{"a":1}]`, `{"a":{},"b":[],"c":{"d":[]}}`, `"a"`, `{"a":1`} {
		if err := Duplicates([]byte(ok)); err != nil {
			t.Errorf("Duplicates(%s) = %v", ok, err)
		}
	}
	for _, bad := range []string{`{"key":"a","key":"b"}`, `{"p":{"to":"x","to":"y"}}`, `[1,{"x":[{"k":1,"k":2}]}]`,
		`{"a":{},"b":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":[],"a":[]}`} {
		var v any
		if json.Unmarshal([]byte(bad), &v) != nil {
			t.Fatalf("%s does not decode: not the case this checks", bad)
		}
		if err := Duplicates([]byte(bad)); err == nil {
			t.Errorf("Duplicates(%s) passed: encoding/json reads it as %v", bad, v)
		}
	}
}
