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
