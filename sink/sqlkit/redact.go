package sqlkit

import (
	"net/url"
	"regexp"
	"strings"
)

// Redacted is what RedactURL and Scrub put in place of a password.
const Redacted = "xxxxx"

var (
	// dsnPassword matches password=... in a key=value DSN or a URL query,
	// quoted ('it''s' or 'a\'b') or not.
	dsnPassword = regexp.MustCompile(`(?i)\b((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.|'')*'|[^\s&]*)`)
	// urlUserinfo matches scheme://user:password@ when url.Parse fails; it
	// swallows up to the last @ so a password containing @ is hidden too.
	urlUserinfo = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^:/?#@]*:).*@`)
)

// RedactURL returns s with any password replaced by xxxxx: the password of a
// URL's userinfo, password= and sslpassword= query parameters, and
// password=... in a key=value DSN ("host=db password=secret"). Everything
// else is kept so the result still says which server is meant. It never fails;
// a string it cannot parse is Redacted by pattern, erring on hiding too much.
func RedactURL(s string) string {
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), Redacted)
			}
			if u.RawQuery != "" {
				u.RawQuery = dsnPassword.ReplaceAllString(u.RawQuery, "${1}"+Redacted)
			}
			return u.String()
		}
		s = urlUserinfo.ReplaceAllString(s, "${1}"+Redacted+"@")
	}
	return dsnPassword.ReplaceAllString(s, "${1}"+Redacted)
}

// SafeError carries a message already cleaned of secrets (Msg) while keeping
// the original error (Err) reachable for errors.Is/As (context.Canceled,
// driver types). Its Error method returns Msg only.
type SafeError struct {
	Msg string
	Err error
}

func (e *SafeError) Error() string { return e.Msg }
func (e *SafeError) Unwrap() error { return e.Err }

// Scrub returns s with every occurrence of secret (raw and URL-escaped)
// replaced by Redacted; an empty secret leaves s as it is.
func Scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	for _, v := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret)} {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return s
}
