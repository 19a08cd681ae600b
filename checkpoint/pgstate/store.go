// Package pgstate keeps idemsync's state in PostgreSQL: the same tables as
// the SQLite state file (package checkpoint) in one schema of a database
// several hosts share, and the run lock as a lease with a fencing token
// (docs/operations.md, "State in PostgreSQL"). It implements
// contract.Store and passes checkpoint/storetest.
//
// It relies on no session state, so it works through a transaction-mode
// pooler: every statement names its schema, no advisory lock, temporary
// table or session setting is used, and statements are not prepared by
// name.
package pgstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ contract.Store = (*Store)(nil)

// DefaultSchema is the schema of the state when the URL names none.
const DefaultSchema = "idemsync"

// DefaultLease is how long a run lock lasts without a renewal.
const DefaultLease = 30 * time.Second

// Store is a state kept in a PostgreSQL schema. It is safe for concurrent
// use.
type Store struct {
	display string // the URL with its password redacted, for messages
	schema  string // quoted identifier
	name    string // the schema's name as given
	pool    *pgxpool.Pool
	log     *slog.Logger
	now     func() time.Time
	lease   time.Duration

	// beforeCommit, when set (tests only), runs just before a transaction
	// commits.
	beforeCommit func()
	// paused, when set (tests only), stops the heartbeats' renewals, as
	// SIGSTOP or a partition would.
	paused atomic.Bool

	// token identifies this Store as the owner of the runs it starts or
	// reopens (runs.owner), as in the SQLite store.
	token string
	// id is the state's identity (its identity table), the first part of
	// the fencing keys it leaves in targets.
	id string

	mu     sync.Mutex
	leases map[string]*lease // by job: the leases this Store holds
}

// IsURL reports whether state names a PostgreSQL state rather than a file.
func IsURL(state string) bool {
	return strings.HasPrefix(state, "postgres://") || strings.HasPrefix(state, "postgresql://")
}

// schemaName is the set of schema names ?schema= accepts, of at most
// maxSchemaName characters (PostgreSQL's identifier limit), checked apart:
// a bounded repeat compiles to one copy of the class per character, a
// cost every idemsync process paid at init (docs/ledger.md, "Speed").
var schemaName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

const maxSchemaName = 63

// config splits the URL's idemsync parameters (schema, lease) from those
// of the connection.
func config(state string) (connURL, schema string, leaseFor time.Duration, err error) {
	u, err := url.Parse(state)
	if err != nil {
		return "", "", 0, errors.New("not a valid URL")
	}
	q := u.Query()
	// Given twice, a parameter is refused rather than read as its first
	// value: libpq reads the last, and hosts whose URLs spell the same
	// schema both ways would keep two states (docs/operations.md).
	for _, k := range []string{"schema", "lease"} {
		if len(q[k]) > 1 {
			return "", "", 0, fmt.Errorf("%s is given twice (%s): give it once", k, strings.Join(q[k], ", "))
		}
	}
	schema, leaseFor = DefaultSchema, DefaultLease
	if v := q.Get("schema"); v != "" {
		if len(v) > maxSchemaName || !schemaName.MatchString(v) {
			return "", "", 0, fmt.Errorf("schema %q: use letters, digits and _ (not starting with a digit)", v)
		}
		schema = v
	}
	if v := q.Get("lease"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			return "", "", 0, fmt.Errorf("lease %q: a duration of 100ms or more, such as 30s", v)
		}
		leaseFor = d
	}
	q.Del("schema")
	q.Del("lease")
	u.RawQuery = q.Encode()
	return u.String(), schema, leaseFor, nil
}

// Open connects to the state at the PostgreSQL URL state (?schema= names
// the schema, idemsync by default; ?lease= the run lock's lease, 30s by
// default), creates or migrates its schema, and refuses one written by a
// newer idemsync or a schema of another application's. A nil logger
// discards logs. Errors are *contract.Error naming the URL without its
// password: exit 2 for a bad URL, 3 when the database cannot be reached,
// 1 otherwise.
func Open(ctx context.Context, state string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	display := sqlkit.RedactURL(state)
	connURL, schema, leaseFor, err := config(state)
	if err != nil {
		return nil, &contract.Error{Class: contract.Invalid, Msg: fmt.Sprintf("state %s: %v", display, err)}
	}
	cfg, err := pgxpool.ParseConfig(connURL)
	if err != nil {
		return nil, &contract.Error{Class: contract.Invalid, Msg: fmt.Sprintf("state %s: %v", display, redactErr(err, state))}
	}
	// No statement prepared by name: a transaction-mode pooler may give
	// the next statement another server connection.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	// Results come back as text (QueryExecModeExec), read as UTF-8 and
	// ISO dates: a client_encoding or DateStyle set on the role or the
	// database would store a key "k€" as other characters than another
	// host's, or return timestamps the driver cannot read. Both are
	// parameters a pooler passes on (docs/operations.md, State in
	// PostgreSQL).
	cfg.ConnConfig.RuntimeParams["client_encoding"] = "UTF8"
	cfg.ConnConfig.RuntimeParams["DateStyle"] = "ISO, MDY"
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, &contract.Error{Class: contract.Invalid, Msg: fmt.Sprintf("state %s: %v", display, redactErr(err, state))}
	}
	s := &Store{
		display: display,
		schema:  pgx.Identifier{schema}.Sanitize(),
		name:    schema,
		pool:    pool,
		log:     logger,
		now:     time.Now,
		lease:   leaseFor,
		token:   newToken(),
		leases:  make(map[string]*lease),
	}
	current, err := s.openCurrent(ctx)
	if err != nil {
		pool.Close()
		return nil, s.wrap("open", err)
	}
	if !current {
		if err := s.migrate(ctx); err != nil {
			pool.Close()
			return nil, s.wrap("open", err)
		}
		if err := s.readIdentity(ctx); err != nil {
			pool.Close()
			return nil, s.wrap("open", err)
		}
	}
	logger.Debug("state opened", "state", display, "schema", schema)
	return s, nil
}

// redactErr keeps the password out of a parse error that quotes the URL.
func redactErr(err error, state string) string {
	msg := sqlkit.RedactURL(err.Error())
	if u, perr := url.Parse(state); perr == nil {
		if p, ok := u.User.Password(); ok {
			msg = sqlkit.Scrub(msg, p)
		}
	}
	return msg
}

// Path returns the state's URL without its password.
func (s *Store) Path() string { return s.display }

// q returns query with {S} replaced by the quoted schema.
func (s *Store) q(query string) string { return strings.ReplaceAll(query, "{S}", s.schema) }

// Check verifies that the schema is there at this build's version.
func (s *Store) Check(ctx context.Context) error {
	v, err := s.version(ctx, s.pool)
	if err != nil {
		return s.wrap("integrity check", err)
	}
	if want := latestVersion(); v != want {
		return &contract.Error{Class: contract.Permanent,
			Msg: fmt.Sprintf("state %s: schema %s is at version %d, this idemsync needs %d", s.display, s.name, v, want)}
	}
	return nil
}

// Close releases the leases still held and closes the connections.
func (s *Store) Close() error {
	s.mu.Lock()
	held := s.leases
	s.leases = map[string]*lease{}
	s.mu.Unlock()
	for _, l := range held {
		s.release(l)
	}
	s.pool.Close()
	return nil
}

// jobName is the set of valid state names, as in the SQLite store.
var jobName = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)?$`)

func checkJob(job string) error {
	if !jobName.MatchString(job) {
		return fmt.Errorf("invalid job name %q: use letters, digits, _ and - (and one dot between a job and its resource)", job)
	}
	return nil
}

// newToken returns a random owner token for a Store.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// inTx runs fn in one read-write transaction and commits it; on any error
// nothing of fn is kept.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.inTxWith(ctx, pgx.TxOptions{}, fn)
}

// inTxWith is inTx with the transaction begun by opts.
func (s *Store) inTxWith(ctx context.Context, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("commit: %w", cerr)
		}
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// inJobTx is inTx for a write to job's runs: while this Store holds the
// lease of job (or of the job file it belongs to), the transaction first
// renews it on condition that its token is unchanged, and rolls back with
// exit 4 when another holder took it (docs/operations.md, "Leases").
func (s *Store) inJobTx(ctx context.Context, job string, fn func(tx pgx.Tx) error) error {
	sent := time.Now()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.fence(ctx, tx, job); err != nil {
			return err
		}
		return fn(tx)
	})
	if err == nil {
		s.renewed(job, sent)
	}
	return err
}
