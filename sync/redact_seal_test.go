package sync

import (
	"strings"
	"testing"
)

// Seal takes every whole-token secret out of a position (its escaped form
// too, a longer secret before a shorter one it holds) and Unseal puts back
// exactly the bytes it took; a marker of a secret the job no longer has is
// an error, not a request with the marker in it.
func TestSealUnseal(t *testing.T) {
	r := NewRedactor()
	r.Add("sk live+key/1", "sk live+key/1-long", "abc")
	for _, in := range []string{
		"c1-sk live+key/1.x",
		"/v1?token=sk+live%2Bkey%2F1&cursor=2",
		"sk live+key/1-long|sk live+key/1",
		"abcdef-abc", // "abc" inside a word stays
		"plain",
		// An API's own text that reads like what Seal writes.
		sealOf("abc"),
		"{$s:0123456789abcdef}|sk live+key/1",
		"{$e}{$s:}{${$$s:",
		"{" + sealOf("abc") + "}",
	} {
		sealed := r.Seal(in)
		for _, s := range []string{"sk live+key/1", "sk+live%2Bkey%2F1"} {
			if strings.Contains(sealed, s) {
				t.Errorf("Seal(%q) = %q: the secret is still there", in, sealed)
			}
		}
		back, err := r.Unseal(sealed)
		if err != nil || back != in {
			t.Errorf("Unseal(Seal(%q)) = %q, %v", in, back, err)
		}
	}
	if got := r.Seal("abcdef-abc"); got != "abcdef-"+sealOf("abc") {
		t.Errorf("Seal: %q", got)
	}
	other := NewRedactor()
	other.Add("another-key")
	if _, err := other.Unseal(r.Seal("c1-sk live+key/1.x")); err == nil {
		t.Error("a marker of an unknown secret was unsealed")
	}
}
