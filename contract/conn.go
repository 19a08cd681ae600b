package contract

import (
	"os"
	"time"
)

// Defaults of target.timeout and target.mode.
const (
	DefaultLockTimeout      = 30 * time.Second // target.timeout.lock
	DefaultStatementTimeout = 5 * time.Minute  // target.timeout.statement
	// DefaultTargetMode is the permission of an SQLite target file
	// idemsync creates when target.mode is unset: the state file's 0600.
	DefaultTargetMode os.FileMode = 0o600
)

// Conn is what opening a job's target database takes from its target
// block: where it is and the options the database applies.
type Conn struct {
	URL string // target.url
	// Mode is the permission of a target file idemsync creates (SQLite).
	// Defaults to DefaultTargetMode.
	Mode os.FileMode
	// LockTimeout and StatementTimeout bound the database's waits
	// (PostgreSQL: lock_timeout and statement_timeout). Default to
	// DefaultLockTimeout and DefaultStatementTimeout.
	LockTimeout, StatementTimeout time.Duration
}

// FileMode returns c.Mode, DefaultTargetMode when it is unset.
func (c Conn) FileMode() os.FileMode {
	if c.Mode == 0 {
		return DefaultTargetMode
	}
	return c.Mode
}

// Waits returns the lock and statement timeouts, each its default when
// unset.
func (c Conn) Waits() (lock, statement time.Duration) {
	lock, statement = DefaultLockTimeout, DefaultStatementTimeout
	if c.LockTimeout > 0 {
		lock = c.LockTimeout
	}
	if c.StatementTimeout > 0 {
		statement = c.StatementTimeout
	}
	return lock, statement
}
