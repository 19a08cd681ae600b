package spec

import (
	"os"
	"strconv"

	"github.com/idemsync/idemsync/contract"
)

// FileMode returns target.mode as a permission, contract.DefaultTargetMode
// when it is unset or invalid (the loader rejects an invalid one).
func (t *Target) FileMode() os.FileMode {
	if m, err := ParseMode(t.Mode); err == nil && t.Mode != "" {
		return m
	}
	return contract.DefaultTargetMode
}

// Conn returns what opening the target database takes from the target
// block: its URL, target.mode and target.timeout.
func (t *Target) Conn() contract.Conn {
	c := contract.Conn{URL: t.URL, Mode: t.FileMode()}
	if t.Timeout != nil {
		c.LockTimeout, c.StatementTimeout = t.Timeout.Lock.Duration, t.Timeout.Statement.Duration
	}
	return c
}

// ParseMode parses an octal permission such as "0640".
func ParseMode(s string) (os.FileMode, error) {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return 0, err
	}
	return os.FileMode(n), nil
}
