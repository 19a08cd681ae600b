package sync

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// Seal puts {$s:HEX} in place of a secret, the first 8 bytes of its
// SHA-256 in hex, and {$e} in place of a "{$" the API wrote itself, so that
// every "{$" of a sealed text is one Seal wrote: an API's cursor that reads
// like a marker goes back to it as it gave it, never as a secret.
//
// An access token the job fetched while running is sealed as {$t} (as
// written) or {$q} (query-escaped): the job's current token, which a later
// process holds under another value (docs/job-file.md, "What is and is not
// a secret").
const (
	sealOpen         = "{$"
	sealEscaped      = "{$e}"
	sealToken        = "{$t}"
	sealTokenEscaped = "{$q}"
	sealLen          = len("{$s:") + 16 + len("}")
)

func sealOf(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "{$s:" + hex.EncodeToString(sum[:8]) + "}"
}

// Seal returns s, a position the API gave (a cursor, a next URL), with
// every registered secret that stands in it as a whole token replaced by a
// marker, so that the checkpoint stores it without the secret; Unseal puts
// the secret back for the request (docs/job-file.md, "What is and is not a
// secret").
func (r *Redactor) Seal(s string) string {
	if s == "" {
		return s
	}
	type span struct {
		from, to int
		v        string
	}
	var hits []span
	var secrets []string
	var tokens map[string]string
	if r != nil {
		r.mu.RLock()
		defer r.mu.RUnlock()
		secrets, tokens = r.secrets, r.tokens
	}
	for _, v := range secrets { // longest first: a longer secret wins an overlap
		for off := 0; off < len(s); {
			i := strings.Index(s[off:], v)
			if i < 0 {
				break
			}
			i += off
			j := i + len(v)
			taken := false
			for _, h := range hits {
				if i < h.to && h.from < j {
					taken = true
				}
			}
			if !taken && wholeToken(s, i, j) {
				hits = append(hits, span{i, j, v})
				off = j
				continue
			}
			off = i + 1
		}
	}
	if len(hits) == 0 && !strings.Contains(s, sealOpen) {
		return s
	}
	for i := 1; i < len(hits); i++ {
		for j := i; j > 0 && hits[j].from < hits[j-1].from; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	var b strings.Builder
	last := 0
	for _, h := range hits {
		b.WriteString(strings.ReplaceAll(s[last:h.from], sealOpen, sealEscaped))
		if m, ok := tokens[h.v]; ok {
			b.WriteString(m)
		} else {
			b.WriteString(sealOf(h.v))
		}
		last = h.to
	}
	b.WriteString(strings.ReplaceAll(s[last:], sealOpen, sealEscaped))
	return b.String()
}

// Unseal puts back the secrets and the "{$" Seal replaced in s. A marker
// of a secret the job no longer has (its ${VAR} changed since the page was
// read) is an error: the position cannot be asked for as the API gave it.
// A "{$" Seal did not write (a position stored before sealing, one typed
// in) stays as it is.
func (r *Redactor) Unseal(s string) (string, error) {
	return r.unseal(s, r.currentToken)
}

// WithToken returns s, a request's URL, with every access token the job
// fetched that stands in it as a whole token (as written or
// query-escaped) replaced by tok, the one the request is sent with: a
// next URL read with the token of its time, or sent again after a 401
// with a refreshed one, carries in its query the token of its header
// (docs/job-file.md, "What is and is not a secret").
func (r *Redactor) WithToken(s, tok string) string {
	sealed := r.Seal(s)
	if !strings.Contains(sealed, sealToken) && !strings.Contains(sealed, sealTokenEscaped) {
		return s
	}
	out, err := r.unseal(sealed, func() (string, error) { return tok, nil })
	if err != nil {
		return s
	}
	return out
}

// unseal is Unseal, with current giving the token a {$t} stands for.
func (r *Redactor) unseal(s string, current func() (string, error)) (string, error) {
	i := strings.Index(s, sealOpen)
	if i < 0 {
		return s, nil
	}
	var known map[string]string
	token, tokenErr := "", error(nil)
	haveToken := false
	var b strings.Builder
	for ; i >= 0; i = strings.Index(s, sealOpen) {
		b.WriteString(s[:i])
		s = s[i:]
		switch {
		case strings.HasPrefix(s, sealEscaped):
			b.WriteString(sealOpen)
			s = s[len(sealEscaped):]
		case strings.HasPrefix(s, sealToken) || strings.HasPrefix(s, sealTokenEscaped):
			if !haveToken {
				token, tokenErr = current()
				haveToken = true
			}
			if tokenErr != nil {
				return "", tokenErr
			}
			if strings.HasPrefix(s, sealToken) {
				b.WriteString(token)
			} else {
				b.WriteString(url.QueryEscape(token))
			}
			s = s[len(sealToken):]
		case isMarker(s):
			if known == nil {
				known = r.markers()
			}
			v, ok := known[s[:sealLen]]
			if !ok {
				return "", fmt.Errorf("the position held a secret of the job that it no longer has (a changed ${VAR})")
			}
			b.WriteString(v)
			s = s[sealLen:]
		default:
			b.WriteString(sealOpen)
			s = s[len(sealOpen):]
		}
	}
	b.WriteString(s)
	return b.String(), nil
}

// currentToken returns the job's current access token, for a position
// that held the one the job had when it was read. A job that has fetched
// none yet (a process continuing a run) gets a stand-in, registered as a
// token of the job: the request is built before any token is fetched,
// and the auth that fetches one for its header puts it in place of the
// stand-in (WithToken), so that fetch is the request's, with its retries,
// its timeout, its class of failure and SIGTERM.
func (r *Redactor) currentToken() (string, error) {
	if r == nil {
		return "", errNoToken
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.current != "":
		return r.current, nil
	case !r.fetches:
		return "", errNoToken
	case r.pending == "":
		var b [16]byte
		_, _ = rand.Read(b[:])
		// The ":" is escaped in a query: {$t} and {$q} stay apart.
		r.pending = "idemsync-token:" + hex.EncodeToString(b[:])
		escaped := url.QueryEscape(r.pending)
		r.secrets = append([]string{r.pending, escaped}, r.secrets...)
		sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
		if r.tokens == nil {
			r.tokens = map[string]string{}
		}
		r.tokens[r.pending], r.tokens[escaped] = sealToken, sealTokenEscaped
	}
	return r.pending, nil
}

var errNoToken = fmt.Errorf("the position held the job's access token, and the job fetches none now (source.auth changed)")

// isMarker reports whether s starts with a marker Seal writes.
func isMarker(s string) bool {
	if len(s) < sealLen || !strings.HasPrefix(s, "{$s:") || s[sealLen-1] != '}' {
		return false
	}
	for _, c := range s[len("{$s:") : sealLen-1] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// markers maps the marker of every registered secret to the secret.
func (r *Redactor) markers() map[string]string {
	known := map[string]string{}
	if r != nil {
		r.mu.RLock()
		for _, v := range r.secrets {
			known[sealOf(v)] = v
		}
		r.mu.RUnlock()
	}
	return known
}
