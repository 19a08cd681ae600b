package initgen

import (
	"net/url"
	"strings"
)

// NameFromURL is the job name init proposes: the URL's last path segment
// that is not a version (v1) or a number, made of letters, digits, _ and
// -; else the host's first label; else "job".
func NameFromURL(u *url.URL) string {
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		s := cleanName(segs[i])
		if s == "" || strings.Trim(s, "0123456789") == "" || len(s) <= 3 && s[0] == 'v' && strings.Trim(s[1:], "0123456789") == "" {
			continue
		}
		return s
	}
	if h := cleanName(strings.Split(u.Hostname(), ".")[0]); h != "" && strings.Trim(h, "0123456789") != "" {
		return h
	}
	return "job"
}

// cleanName keeps letters, digits, _ and - of s (lowercased), other runs
// of characters becoming one -.
func cleanName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
	}
	return strings.Trim(b.String(), "-")
}

// ValidJobName reports whether s is a valid job name (letters, digits, _, -).
func ValidJobName(s string) bool {
	return s != "" && strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return -1
		}
		return r
	}, s) == ""
}
