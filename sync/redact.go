package sync

import (
	"log/slog"
	"net/url"
	"regexp"
	"sort"
	"strings"
	gosync "sync"
	"unicode"
	"unicode/utf8"
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
	// tokens maps each access token fetched while running (and its
	// query-escaped form) to the marker Seal writes for it: the job's
	// current token, whatever its value (redact_seal.go).
	tokens map[string]string
	// fetches: the job fetches access tokens (FetchesTokens).
	fetches bool
	current string // the token registered last
	pending string // stands for the token not fetched yet (currentToken)
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

// AddToken registers an access token the job fetched while running
// (OAuth2): a secret like any other, which a position also seals as the
// job's current token rather than as this value (redact_seal.go).
func (r *Redactor) AddToken(v string) {
	if r == nil {
		return
	}
	r.Add(v)
	v = strings.TrimSpace(v)
	if len(v) < 3 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tokens == nil {
		r.tokens = map[string]string{}
	}
	r.tokens[v] = sealToken
	r.current = v
	if e := url.QueryEscape(v); e != v {
		r.tokens[e] = sealTokenEscaped
	}
}

// FetchesTokens says that the job fetches access tokens while running,
// and puts the one a request is sent with in its URL (WithToken): Unseal
// of a position that held the job's token needs none fetched yet.
func (r *Redactor) FetchesTokens() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetches = true
}

var urlPassword = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://[^/\s:@]*:)([^@\s/]*)@`)

// dsnPassword matches password= and sslpassword= (the client key's
// passphrase) in a connection string or a URL's query.
var dsnPassword = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('[^']*'|\S+)`)

// Redact returns s with every registered secret and every URL or DSN
// password replaced by [redacted]. A secret is matched as a whole token,
// never inside a word. Redact the whole text before cutting or reflowing it:
// a secret cut in two or with its spaces collapsed is no longer found.
func (r *Redactor) Redact(s string) string {
	s = urlPassword.ReplaceAllString(s, "${1}"+Redacted+"@")
	s = dsnPassword.ReplaceAllString(s, "${1}"+Redacted)
	if r == nil {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	// Escaped forms first: a longer secret written with an escape (a tab
	// as \t) must go whole before a shorter one (its part after the first
	// space) is replaced in plain text and breaks it up.
	s = redactDecoded(s, r.secrets)
	for _, v := range r.secrets {
		if strings.Contains(s, v) {
			s = replaceTokens(s, v)
		}
	}
	if strings.Contains(s, elision) {
		s = r.redactElided(s)
	}
	return s
}

// elision ends a text cut short (Elide, Excerpt).
const elision = "…"

// redactElided redacts the start of a secret that a text was cut in before
// it reached the redactor (a bad record's reason quotes a value cut to 40
// bytes): the word right before an elision that is the first 6 bytes or
// more of a secret. Cut texts should be redacted before they are cut; this
// is the net for those that were not.
func (r *Redactor) redactElided(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, elision)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		head := s[:i]
	secrets:
		for _, v := range r.secrets {
			for n := len(v) - 1; n >= 6; n-- {
				if strings.HasSuffix(head, v[:n]) && wholeToken(head, i-n, i) {
					head = head[:i-n] + Redacted
					break secrets
				}
			}
		}
		b.WriteString(head + elision)
		s = s[i+len(elision):]
	}
}

// replaceTokens replaces every occurrence of v in s that stands as a whole
// token (see wholeToken) by [redacted].
func replaceTokens(s, v string) string {
	var b strings.Builder
	last := 0
	for off := 0; off < len(s); {
		i := strings.Index(s[off:], v)
		if i < 0 {
			break
		}
		i += off
		j := i + len(v)
		if !wholeToken(s, i, j) {
			off = i + 1
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(Redacted)
		last, off = j, j
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// wholeToken reports whether s[i:j], a secret's occurrence, is a whole
// token: no word character (letter, digit, _) continues it on either side
// where it begins or ends with one. "out" is not redacted in "without";
// a token between "=" and "&", in quotes or after "Basic " is
// (docs/job-file.md, "What is and is not a secret").
func wholeToken(s string, i, j int) bool {
	if first, _ := utf8.DecodeRuneInString(s[i:j]); i > 0 && isWordRune(first) {
		if prev, _ := utf8.DecodeLastRuneInString(s[:i]); isWordRune(prev) {
			return false
		}
	}
	if last, _ := utf8.DecodeLastRuneInString(s[i:j]); j < len(s) && isWordRune(last) {
		if next, _ := utf8.DecodeRuneInString(s[j:]); isWordRune(next) {
			return false
		}
	}
	return true
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// Merge registers every secret o knows (a nil o has none): a job file with
// several resources redacts its shared output with all of theirs.
func (r *Redactor) Merge(o *Redactor) {
	if r == nil || o == nil {
		return
	}
	o.mu.RLock()
	vals := append([]string(nil), o.secrets...)
	var toks []string
	for v, m := range o.tokens {
		if m == sealToken {
			toks = append(toks, v)
		}
	}
	o.mu.RUnlock()
	r.Add(vals...)
	for _, v := range toks {
		r.AddToken(v)
	}
}
