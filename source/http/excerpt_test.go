package httpsource

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// leaked returns the parts of secret (runs of 6 bytes or more, its words
// too) that s holds.
func leaked(s, secret string) []string {
	var out []string
	for n := len(secret); n >= 6; n-- {
		for i := 0; i+n <= len(secret); i++ {
			if p := secret[i : i+n]; strings.TrimSpace(p) == p && strings.Contains(s, p) {
				return append(out, p)
			}
		}
	}
	for _, w := range strings.Fields(secret) {
		if len(w) >= 4 && strings.Contains(s, w) {
			out = append(out, w)
		}
	}
	return out
}

// An error body or an error_path payload that echoes a secret at any
// offset around the excerpt's 200-byte limit, with its spaces and tabs as
// they are, leaves no part of the secret in the error: the whole text is
// redacted before it is cut and before its whitespace is collapsed.
func TestErrorExcerptRedactsBeforeCutting(t *testing.T) {
	const token = "Zq7Vx3Kp9Wm2Rt8Ln4Hs6Jd1Bn5Mc0Xe"
	for _, secret := range []string{token, "pass  word  s3cret!", "tab\t\tTk4y\tVq9Lw"} {
		for off := 150; off <= 205; off++ {
			pad := strings.Repeat(".", off-len(`{"error":"`))
			for _, tc := range []struct {
				name, source string
				status       int
				body         string
			}{
				{"403 body", "", 403, `{"error":"` + pad + secret + ` rejected"}`},
				{"error_path", "  error_path: error\n", 200, fmt.Sprintf(`{"error":%s,"data":[]}`, jsonString(pad+secret+" rejected"))},
			} {
				api := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, tc.status, tc.body) })
				spec := fetchSpec(api.URL, tc.source+"  auth: {type: basic, username: u, password: \"${PW}\"}\n", "  attempts: 1\n")
				f, logs := newTestFetcher(t, spec, map[string]string{"PW": secret})
				e := fetchErr(t, f, api.URL)
				if p := leaked(e.Error(), secret); len(p) > 0 {
					t.Fatalf("%s, secret %q at offset %d: %q leaked in %s", tc.name, secret, off, p, e.Error())
				}
				if p := leaked(logs.String(), secret); len(p) > 0 {
					t.Fatalf("%s, secret %q at offset %d: %q leaked in the log %s", tc.name, secret, off, p, logs.String())
				}
			}
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
