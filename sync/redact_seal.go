package sync

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// sealMarker matches what Seal puts in place of a secret: {$s:HEX}, the
// first 8 bytes of the secret's SHA-256 in hex.
var sealMarker = regexp.MustCompile(`\{\$s:([0-9a-f]{16})\}`)

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
	if r == nil || s == "" {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	type span struct {
		from, to int
		v        string
	}
	var hits []span
	for _, v := range r.secrets { // longest first: a longer secret wins an overlap
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
	if len(hits) == 0 {
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
		b.WriteString(s[last:h.from])
		b.WriteString(sealOf(h.v))
		last = h.to
	}
	b.WriteString(s[last:])
	return b.String()
}

// Unseal puts back the secrets Seal replaced in s. A marker of a secret
// the job no longer has (its ${VAR} changed since the page was read) is an
// error: the position cannot be asked for as the API gave it.
func (r *Redactor) Unseal(s string) (string, error) {
	if !strings.Contains(s, "{$s:") {
		return s, nil
	}
	known := map[string]string{}
	if r != nil {
		r.mu.RLock()
		for _, v := range r.secrets {
			known[sealOf(v)] = v
		}
		r.mu.RUnlock()
	}
	var missing bool
	out := sealMarker.ReplaceAllStringFunc(s, func(m string) string {
		v, ok := known[m]
		if !ok {
			missing = true
			return m
		}
		return v
	})
	if missing {
		return "", fmt.Errorf("the position held a secret of the job that it no longer has (a changed ${VAR})")
	}
	return out, nil
}
