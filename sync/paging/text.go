package paging

import (
	"fmt"
	"net/url"
)

// Elide shortens s to its first n bytes followed by "…" when it is longer,
// for quoting user input in messages.
func Elide(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ValidURL checks an http(s) URL: it must parse, use http or https and
// name a host.
func ValidURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme must be http or https")
	}
	if u.Host == "" {
		return fmt.Errorf("missing host")
	}
	return nil
}

// IsDecimal reports whether s is a decimal number: an optional sign, digits
// with at most one point, and an optional exponent of at most 4 digits, no
// longer than 1000 characters. The bounds keep exact arithmetic on hostile
// values (1e2000000000) cheap and within what PostgreSQL's numeric stores.
func IsDecimal(s string) bool {
	if s == "" || len(s) > 1000 {
		return false
	}
	i := 0
	if s[0] == '-' || s[0] == '+' {
		i++
	}
	digits, point := 0, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point:
			point = true
		case (c == 'e' || c == 'E') && digits > 0:
			return isExponent(s[i+1:])
		default:
			return false
		}
	}
	return digits > 0
}

// isExponent reports whether exp, what follows a decimal's e, is an
// optional sign and 1 to 4 digits.
func isExponent(exp string) bool {
	if exp != "" && (exp[0] == '-' || exp[0] == '+') {
		exp = exp[1:]
	}
	if exp == "" || len(exp) > 4 {
		return false
	}
	for j := 0; j < len(exp); j++ {
		if exp[j] < '0' || exp[j] > '9' {
			return false
		}
	}
	return true
}
