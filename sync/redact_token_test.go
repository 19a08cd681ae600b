package sync

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/sync/paging"
)

// A secret is matched as a whole token, never inside a word: a short
// value that happens to be registered ("out") leaves "without" alone,
// while every form a real token is echoed in (a query, a JSON string,
// Basic credentials, percent- or JSON-escaped) is still redacted.
// docs/job-file.md ("What is and is not a secret").
func TestRedactWholeTokens(t *testing.T) {
	r := NewRedactor()
	r.Add("out", "ak_live_Q7x9Zp2W", "alice:pw-Rt8Ln4")
	basic := base64.StdEncoding.EncodeToString([]byte("alice:pw-Rt8Ln4"))
	r.Add(basic)
	for _, s := range []string{
		"next page is on another origin: followed without the job's credentials",
		"layout outdated; checkout timeout",
		"the token ak_live_Q7x9Zp2Wextra is longer", // another word that begins like the token
	} {
		if got := r.Redact(s); got != s {
			t.Errorf("ordinary words changed:\n in: %s\nout: %s", s, got)
		}
	}
	for _, s := range []string{
		"write to out/x.db",
		"GET /v1/items?api_key=ak_live_Q7x9Zp2W&page=2",
		`{"self":"https://api.example.com/v1/items?api_key=ak_live_Q7x9Zp2W"}`,
		`{"echo":"ak_live_Q7x9Zp2W"}`,
		"Authorization: Basic " + basic,
		"/v1/items?api_key=" + url.QueryEscape("ak_live_Q7x9Zp2W") + "%26x",
		`key%3Dak_live_Q7x9Zp2W%26page%3D2`,
		`{"error":"key\u003dak_live_Q7x9Zp2W"}`,
		`{"error":"line\nak_live_Q7x9Zp2W"}`,
	} {
		got := r.Redact(s)
		if !strings.Contains(got, Redacted) || strings.Contains(got, "Q7x9Zp2W") || strings.Contains(got, basic) {
			t.Errorf("secret not redacted:\n in: %s\nout: %s", s, got)
		}
	}
}

// A secret with runs of spaces or tabs is redacted whole in every form it
// can be echoed in (raw, JSON-escaped, percent- and form-encoded): no part
// of it is left.
func TestRedactWhitespaceSecrets(t *testing.T) {
	for _, secret := range []string{"pass  word  s3cret!", "tab\t\tpw\tk3y-Vx", "mixed \t pw  Zq7"} {
		r := NewRedactor()
		r.Add(secret)
		jsonEsc := strings.NewReplacer("\t", `\t`).Replace(secret)
		for _, in := range []string{
			"rejected " + secret + " given",
			`{"error":"rejected ` + jsonEsc + `"}`,
			"/login?pw=" + url.QueryEscape(secret),
			"/login/" + url.PathEscape(secret) + "/x",
		} {
			out := r.Redact(in)
			for _, part := range strings.Fields(secret) {
				if len(part) >= 3 && strings.Contains(out, part) {
					t.Errorf("%q: part %q left in %q", in, part, out)
				}
			}
		}
	}
}

// Excerpt redacts before it cuts: a secret across the 200-byte limit, or
// across the end of the part of a huge body it reads, leaves no part.
func TestExcerptRedactsBeforeCutting(t *testing.T) {
	const secret = "Zq7Vx3Kp9Wm2Rt8Ln4Hs6Jd1"
	r := NewRedactor()
	r.Add(secret)
	for off := 170; off <= 200; off++ {
		got := r.Excerpt(strings.Repeat("a", off)+" "+secret+" tail", 200)
		if strings.Contains(got, secret[:6]) || len(got) > 200+len("…") {
			t.Fatalf("offset %d: %q", off, got)
		}
	}
	huge := strings.Repeat(" \t\n", excerptWindow/3) + secret + strings.Repeat("x", 100)
	for cut := excerptWindow - len(secret); cut < excerptWindow; cut++ {
		text := huge[len(huge)-len(secret)-100-cut:]
		if got := r.Excerpt(text, 200); strings.Contains(got, secret[:6]) {
			t.Fatalf("secret across the window's end at %d: %q", cut, got)
		}
	}
}

// A value cut short by Elide ("…") before it reached the redactor (a bad
// record's reason quotes 40 bytes of the value) loses the start of a
// secret it was cut in: no part of the secret is left before the "…".
func TestRedactSecretCutByElision(t *testing.T) {
	const secret = "ak_live_Q7x9Zp2W"
	r := NewRedactor()
	r.Add(secret)
	for n := 6; n < len(secret); n++ {
		value := `"https://api.example.com/v1?k=` + secret + `"`
		cut := len(value) - len(secret) - 1 + n
		got := r.Redact("column self: want an integer, got a string " + paging.Elide(value, cut))
		if strings.Contains(got, secret[:6]) {
			t.Errorf("cut after %d bytes of the secret: %s", n, got)
		}
	}
	if got := r.Redact("ak_l… and akin…"); got != "ak_l… and akin…" {
		t.Errorf("short or other words before an elision changed: %s", got)
	}
}
