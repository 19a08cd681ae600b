package sync

import (
	"log/slog"
	"net/url"
	"regexp"
	"sort"
	"strings"
	gosync "sync"
)

// Redacted is what every secret prints as.
const Redacted = "[redacted]"

// Secret is a string that never prints its value: its String and LogValue
// give [redacted].
type Secret string

func (Secret) String() string { return Redacted }

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// Redactor removes known secrets (header values, ${VAR} values, URL
// passwords) from any text before it is printed or stored. The zero value is
// not usable; use NewRedactor. A nil *Redactor redacts only URL passwords.
type Redactor struct {
	mu      gosync.RWMutex
	secrets []string // longest first
}

// NewRedactor returns an empty Redactor.
func NewRedactor() *Redactor { return &Redactor{} }

// Add registers secret values. Values shorter than 3 characters are ignored:
// replacing them would mangle ordinary text without protecting anything.
func (r *Redactor) Add(values ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < 3 {
			continue
		}
		add := []string{v}
		// A secret may also appear URL-escaped (in a query) or with a scheme
		// prefix stripped ("Bearer x" → "x").
		if e := url.QueryEscape(v); e != v {
			add = append(add, e)
		}
		if _, rest, ok := strings.Cut(v, " "); ok && len(strings.TrimSpace(rest)) >= 3 {
			add = append(add, strings.TrimSpace(rest))
		}
		for _, a := range add {
			dup := false
			for _, s := range r.secrets {
				if s == a {
					dup = true
				}
			}
			if !dup {
				r.secrets = append(r.secrets, a)
			}
		}
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}

var urlPassword = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://[^/\s:@]*:)([^@\s/]*)@`)
var dsnPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('[^']*'|\S+)`)

// Redact returns s with every registered secret and every URL or DSN
// password replaced by [redacted].
func (r *Redactor) Redact(s string) string {
	s = urlPassword.ReplaceAllString(s, "${1}"+Redacted+"@")
	s = dsnPassword.ReplaceAllString(s, "${1}"+Redacted)
	if r == nil {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.secrets {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return redactDecoded(s, r.secrets)
}

// Merge registers every secret o knows (a nil o has none): a job file with
// several resources redacts its shared output with all of theirs.
func (r *Redactor) Merge(o *Redactor) {
	if r == nil || o == nil {
		return
	}
	o.mu.RLock()
	vals := append([]string(nil), o.secrets...)
	o.mu.RUnlock()
	r.Add(vals...)
}
