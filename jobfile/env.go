package jobfile

import (
	"github.com/idemsync/idemsync/sync/paging"

	"fmt"
	"os"
	"strings"
)

// LookupFunc looks an environment variable up, like os.LookupEnv.
type LookupFunc func(name string) (string, bool)

// expandEnv replaces ${VAR} and ${VAR:-default} in s. $$ is a literal $.
// It returns the expanded string and the values substituted from the
// environment (secrets to redact), or an error naming the first variable that
// is unset (and has no default) or a malformed reference.
func expandEnv(s string, lookup LookupFunc) (string, []string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	var used []string
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if i+1 >= len(s) || s[i+1] != '{' {
			b.WriteByte('$')
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", nil, fmt.Errorf("unterminated ${ in %q", paging.Elide(s, 40))
		}
		ref := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if strings.Contains(def, "${") { // would be sent as written: ${A:-${B}} is "${B}"
			return "", nil, fmt.Errorf("a default cannot hold a ${VAR} reference: ${%s}", paging.Elide(ref, 40))
		}
		if !validVarName(name) {
			return "", nil, fmt.Errorf("invalid variable name %q in ${%s}", name, paging.Elide(ref, 40))
		}
		v, ok := lookup(name)
		switch {
		case ok && (v != "" || !hasDef):
			if v != "" {
				used = append(used, v)
			}
		case hasDef:
			v = def
		default:
			return "", nil, fmt.Errorf("environment variable %s is not set", name)
		}
		b.WriteString(v)
		i += 2 + end
	}
	return b.String(), used, nil
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
