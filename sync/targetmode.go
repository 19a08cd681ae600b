package sync

import (
	"os"
	"strconv"
	"strings"
)

// DefaultTargetMode is the permission of an SQLite target file idemsync
// creates when target.mode is unset: the state file's 0600.
const DefaultTargetMode os.FileMode = 0o600

// FileMode returns target.mode as a permission, DefaultTargetMode when it
// is unset or invalid (the loader rejects an invalid one).
func (t *Target) FileMode() os.FileMode {
	if m, err := parseMode(t.Mode); err == nil && t.Mode != "" {
		return m
	}
	return DefaultTargetMode
}

// parseMode parses an octal permission such as "0640".
func parseMode(s string) (os.FileMode, error) {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return 0, err
	}
	return os.FileMode(n), nil
}

// checkTargetMode validates target.mode: an octal permission of at most
// 0777 that lets the owner read and write, on an SQLite target.
func checkTargetMode(t *Target, bad func(key, format string, args ...any)) {
	if t.Mode == "" {
		return
	}
	m, err := parseMode(t.Mode)
	switch {
	case err != nil:
		bad("target.mode", "%q is not an octal permission such as \"0640\"", t.Mode)
	case m > 0o777:
		bad("target.mode", "%q is not a permission: at most 0777 (no setuid, setgid or sticky bits)", t.Mode)
	case m&0o600 != 0o600:
		bad("target.mode", "%q must let the owner read and write the file (0600 at least)", t.Mode)
	case !strings.HasPrefix(strings.ToLower(t.URL), "sqlite:"):
		bad("target.mode", "applies to sqlite targets only (a PostgreSQL server owns its files)")
	}
}
