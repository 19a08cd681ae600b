package sync

import (
	"os"
	"strconv"
)

// DefaultTargetMode is the permission of an SQLite target file idemsync
// creates when target.mode is unset: the state file's 0600.
const DefaultTargetMode os.FileMode = 0o600

// FileMode returns target.mode as a permission, DefaultTargetMode when it
// is unset or invalid (the loader rejects an invalid one).
func (t *Target) FileMode() os.FileMode {
	if m, err := ParseMode(t.Mode); err == nil && t.Mode != "" {
		return m
	}
	return DefaultTargetMode
}

// ParseMode parses an octal permission such as "0640".
func ParseMode(s string) (os.FileMode, error) {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return 0, err
	}
	return os.FileMode(n), nil
}
