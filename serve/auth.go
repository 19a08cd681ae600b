package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// TokenEnv is the environment variable the bearer token is read from
// (docs/serve.md, "Security"): never a flag, which ps would show.
const TokenEnv = "IDEMSYNC_SERVE_TOKEN"

// minTokenLen is the shortest token accepted: a guessable token is no
// token.
const minTokenLen = 16

// CheckListen refuses a configuration that would expose the server
// without a token: an address that is not loopback needs one, and a
// token, when set, must be at least minTokenLen bytes. The blanks around
// a token are not part of it (a secret read from a file ends with a
// newline): see newToken.
func CheckListen(addr, token string) error {
	token = strings.TrimSpace(token)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: want host:port (e.g. 127.0.0.1:8787): %v", addr, err)
	}
	if token != "" && len(token) < minTokenLen {
		return fmt.Errorf("$%s is %d bytes long: use at least %d random bytes (e.g. openssl rand -hex 32)", TokenEnv, len(token), minTokenLen)
	}
	if token == "" && !loopback(host) {
		return fmt.Errorf("--listen %s is not a loopback address: set $%s to a bearer token, or listen on 127.0.0.1", addr, TokenEnv)
	}
	return nil
}

// loopback reports whether host names only this machine. An empty host
// (":8787") listens on every interface.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// token checks a request's bearer token in constant time. A nil *token
// (no token configured, loopback only) lets every request through.
type token struct{ sum [sha256.Size]byte }

func newToken(t string) *token {
	if t = strings.TrimSpace(t); t == "" {
		return nil
	}
	return &token{sum: sha256.Sum256([]byte(t))}
}

// allows reports whether r carries the token: Authorization: Bearer
// TOKEN, the scheme's name in any case (HTTP's schemes are
// case-insensitive). Both sides are hashed first so that the comparison
// takes the same time whatever the length of what was sent.
func (t *token) allows(r *http.Request) bool {
	if t == nil {
		return true
	}
	scheme, got, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
	return subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 && ok && strings.EqualFold(scheme, "Bearer")
}

// guard answers 401 to a request without the token.
func (t *token) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !t.allows(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="idemsync"`)
			writeError(w, http.StatusUnauthorized, exitUsage, "missing or wrong bearer token (Authorization: Bearer $"+TokenEnv+")")
			return
		}
		next.ServeHTTP(w, r)
	})
}
