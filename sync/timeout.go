package sync

import (
	"time"
)

// Defaults of target.timeout.
const (
	DefaultLockTimeout      = 30 * time.Second // target.timeout.lock
	DefaultStatementTimeout = 5 * time.Minute  // target.timeout.statement
)

// TargetTimeout is target.timeout: how long one statement of the target
// database may wait. PostgreSQL applies them to every statement of the
// sink's session (lock_timeout, statement_timeout); a statement that passes
// one fails as a transient error (exit 3) and its page rolls back.
type TargetTimeout struct {
	// Lock bounds the wait for a lock held by another session (a LOCK
	// TABLE, a long ALTER TABLE, a VACUUM FULL). Defaults to 30s.
	Lock Duration `yaml:"lock,omitempty" json:"lock,omitempty"`
	// Statement bounds one statement, its lock waits included. Defaults
	// to 5m.
	Statement Duration `yaml:"statement,omitempty" json:"statement,omitempty"`
}

// finishTimeout fills target.timeout's defaults and reports, through bad,
// a value PostgreSQL cannot honour (it counts whole milliseconds, and 0
// would mean no limit at all).
func (t *Target) finishTimeout(bad func(key, format string, args ...any)) {
	if t.Timeout == nil {
		t.Timeout = &TargetTimeout{}
	}
	for _, d := range []struct {
		key string
		v   *Duration
		def time.Duration
	}{
		{"target.timeout.lock", &t.Timeout.Lock, DefaultLockTimeout},
		{"target.timeout.statement", &t.Timeout.Statement, DefaultStatementTimeout},
	} {
		switch {
		case d.v.Duration == 0:
			d.v.Duration = d.def
		case d.v.Duration < time.Millisecond:
			bad(d.key, "%s is below the database's resolution of 1ms", d.v.Duration)
		case d.v.Duration > maxTimeout:
			bad(d.key, "%s exceeds the largest limit, %s", d.v.Duration, maxTimeout)
		}
	}
}

// maxTimeout is the largest lock_timeout/statement_timeout PostgreSQL
// accepts (INT_MAX milliseconds).
const maxTimeout = time.Duration(1<<31-1) * time.Millisecond
