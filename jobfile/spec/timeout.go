package spec

// TargetTimeout is target.timeout (defaults: contract.DefaultLockTimeout
// and contract.DefaultStatementTimeout): how long one statement of the target
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
