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

// An access token the job fetched while running (OAuth2) and an API
// echoed into a position (Facebook's Graph API writes access_token= into
// its next URLs) is sealed as the job's current access token, not as that
// token's value: a later process, which fetches another token, asks for
// the position with its own token instead of failing on a secret it
// never had (docs/job-file.md, "What is and is not a secret").
func TestSealAccessToken(t *testing.T) {
	first := NewRedactor()
	first.Add("static-key")
	first.AddToken("tokA.1+/=")
	in := "https://graph.example/v1/feed?access_token=tokA.1%2B%2F%3D&after=QVFI&k=static-key"
	sealed := first.Seal(in)
	if strings.Contains(sealed, "tokA") {
		t.Fatalf("Seal(%q) = %q: the token is still there", in, sealed)
	}
	if back, err := first.Unseal(sealed); err != nil || back != in {
		t.Errorf("the same process: Unseal = %q, %v; want %q", back, err, in)
	}
	// A later process, which has fetched no token yet, builds the request
	// with a stand-in that the token of its header replaces (WithToken).
	later := NewRedactor()
	later.Add("static-key")
	later.FetchesTokens()
	back, err := later.Unseal(sealed)
	if err != nil || strings.Contains(back, "{$") || back == in {
		t.Fatalf("a later process: Unseal = %q, %v", back, err)
	}
	if again := later.Seal(back); again != sealed {
		t.Errorf("a later process: Seal(Unseal) = %q, want %q", again, sealed)
	}
	if got, want := later.WithToken(back, "tokB/"), strings.Replace(in, "tokA.1%2B%2F%3D", "tokB%2F", 1); got != want {
		t.Errorf("a later process: the request goes as %q, want %q", got, want)
	}
	if _, err := NewRedactor().Unseal(sealed); err == nil {
		t.Error("a position holding the access token unsealed with no token source")
	}
}

// A request's URL holding an earlier access token of the job (as written
// or escaped) is sent with the token of its header; one without stays as
// it is, other secrets and an API's own "{$" included.
func TestWithToken(t *testing.T) {
	r := NewRedactor()
	r.Add("static-key")
	r.AddToken("tokA.1+/=")
	r.AddToken("tokB")
	in := "https://graph.example/v1/feed?access_token=tokA.1%2B%2F%3D&t=tokB&k=static-key&c={$s:00}"
	want := "https://graph.example/v1/feed?access_token=tokC%2F&t=tokC/&k=static-key&c={$s:00}"
	if got := r.WithToken(in, "tokC/"); got != want {
		t.Errorf("WithToken = %q, want %q", got, want)
	}
	plain := "https://graph.example/v1/feed?k=static-key&c={$t}"
	if got := r.WithToken(plain, "tokC"); got != plain {
		t.Errorf("WithToken(%q) = %q: changed a URL without a token", plain, got)
	}
}
