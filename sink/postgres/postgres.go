// Package postgres is the PostgreSQL target of idemsync (pgx/v5): Sink
// implements contract.Sink, OpenTarget and OpenRead make it known to the opener
// in package sink, and types.go holds its one table of column types. It
// passes the suite of sink/sinktest.
package postgres

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ConnectTimeout is the default limit on establishing a connection,
// used unless the URL sets connect_timeout.
const ConnectTimeout = 10 * time.Second

// Sink is the PostgreSQL sink (pgx/v5). Each page is written in one
// transaction by one INSERT … SELECT FROM unnest(one array per column)
// ON CONFLICT (key) DO UPDATE … WHERE the hash differs.
//
// Type mapping:
//
//	text      text
//	integer   bigint
//	real      double precision
//	numeric   numeric, sent exactly (parsed from the decimal string, never
//	          through float64)
//	boolean   boolean
//	timestamp timestamptz
//	json      jsonb
//
// plus _idemsync_hash text and _idemsync_synced_at timestamptz. Table.Schema
// names the schema (it must exist); "" means the search_path.
//
// It holds one connection, used by one call at a time, and reconnects on the
// next call after the connection was lost.
type Sink struct {
	mu       sync.Mutex // serializes calls; guards conn
	cfg      *pgx.ConnConfig
	conn     *pgx.Conn
	addr     string // host:port, for messages
	user     string
	password string // only to scrub it out of driver texts
	logger   *slog.Logger
	types    map[string]map[string]string // column types by quoted table, until Prepare
	triggers map[string]bool              // whether a trigger may keep rows out (keepsOut), by quoted table, until Prepare
	feed     feedHandles                  // the change feed's handles by schema, once FeedDB opened them (feed.go)
	own      map[string]bool              // whether the table holds only rows this sink inserted into it empty, by quoted table, until Prepare (fresh.go)
	plain    map[string]bool              // whether the table has no trigger and no rule, by quoted table, until Prepare (copy.go)
	copyBuf  []byte                       // the last copied page's COPY stream, its buffer reused by the next (copy.go)
	fenced   map[string]bool              // fences tables known to exist, by quoted name (fence.go)
	// progressed: progress tables known to exist, by quoted name (progress.go).
	progressed map[string]bool
	checks     atomic.Pointer[rowChecks] // CheckRow's checks of the last table's columns (validate.go)
	// rechecked: tables whose triggers merge asked about again since Prepare (upsert.go).
	rechecked map[string]bool
}

var _ contract.Sink = (*Sink)(nil)

// Open connects to the PostgreSQL server named by dsn (a
// postgres:// URL or a key=value DSN, anything pgx accepts; libpq's PG*
// environment variables and ~/.pgpass fill in what it omits).
// connect_timeout defaults to ConnectTimeout. It connects before
// returning. A nil logger discards logs.
//
// Errors are *contract.Error naming host:port but never the password:
// Invalid for a malformed dsn, Transient when the server cannot be
// reached or is starting up, Permanent for failed authentication, a
// missing database or a rejected TLS certificate.
//
// Every statement is bounded by the defaults of contract.Conn.Waits
// (lock_timeout 30s, statement_timeout 5m); OpenTarget applies the job's
// target.timeout instead. A cancelled context cancels the statement in
// flight on the server.
func Open(ctx context.Context, dsn string, logger *slog.Logger) (*Sink, error) {
	return openPostgres(ctx, contract.Conn{URL: dsn}, logger)
}

// openPostgresConfig connects as Open does, with configure applied
// to the parsed configuration first.
func openPostgresConfig(ctx context.Context, dsn string, logger *slog.Logger, configure func(*pgx.ConnConfig)) (*Sink, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// Driver parse errors may quote the URL; build our own message.
		return nil, &contract.Error{
			Class: contract.Invalid,
			Msg:   "invalid postgres url " + sqlkit.RedactURL(dsn),
			Hint:  "use postgres://user:password@host:5432/database?sslmode=disable (escape special characters in the password with %XX)",
		}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = ConnectTimeout
	}
	configure(cfg)
	// Every value is sent as UTF-8: a client_encoding set on the role or
	// the database (LATIN1) would have the server convert each byte of a
	// non-ASCII character into a character of its own, and store
	// "hÃ©llo" for "héllo" (docs/job-file.md, PostgreSQL connections).
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["client_encoding"] = "UTF8"
	p := &Sink{
		cfg:        cfg,
		addr:       net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))),
		user:       cfg.User,
		password:   cfg.Password,
		logger:     logger,
		fenced:     map[string]bool{},
		progressed: map[string]bool{},
	}
	if strings.HasPrefix(cfg.Host, "/") {
		p.addr = cfg.Host // unix socket directory
	}
	if _, err := p.connect(ctx); err != nil {
		return nil, err
	}
	logger.Debug("opened postgres target", "addr", p.addr, "user", p.user, "database", cfg.Database)
	return p, nil
}

// connect returns the open connection, establishing a new one when there is
// none or the last one was lost. The caller holds p.mu (or owns p).
func (p *Sink) connect(ctx context.Context) (*pgx.Conn, error) {
	if p.conn != nil && !p.conn.IsClosed() {
		return p.conn, nil
	}
	conn, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		return nil, p.connectError(err)
	}
	p.conn = conn
	return conn, nil
}

// Close closes the connection. Errors while saying goodbye to the server
// are ignored: there is nothing left to lose.
func (p *Sink) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeFeed()
	if p.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.conn.Close(ctx)
		p.conn = nil
	}
	return nil
}

// connectError translates a failure to establish a connection. The message
// is built from the parsed configuration, never from the driver's text,
// except for the innermost cause, scrubbed of the password.
func (p *Sink) connectError(err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("connect to postgres at %s: %w", p.addr, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "28P01", "28000":
			return &contract.Error{
				Class: contract.Permanent,
				Msg:   fmt.Sprintf("authentication failed for user %q at %s", p.user, p.addr),
				Hint:  "check the user and password in target.url",
				Err:   &sqlkit.SafeError{Msg: "SQLSTATE " + pgErr.Code, Err: err},
			}
		case "3D000":
			return &contract.Error{
				Class: contract.Permanent,
				Msg:   "connect to postgres at " + p.addr,
				Hint:  "create the database or fix target.url",
				Err:   p.safe(pgErr.Message, err),
			}
		case "08P01":
			// A pooler (PgBouncer) refuses the lock_timeout and
			// statement_timeout sent when connecting: no retry changes that.
			if strings.Contains(pgErr.Message, "unsupported startup parameter") {
				return &contract.Error{
					Class: contract.Permanent,
					Msg:   "connect to postgres at " + p.addr + ": a connection pooler refused a setting idemsync sends when connecting",
					Hint:  poolerHint,
					Err:   p.safe(pgErr.Message, err),
				}
			}
		}
		return p.dbError("connect to postgres at "+p.addr, err)
	}
	var verifyErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidErr x509.CertificateInvalidError
	if errors.As(err, &verifyErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr) || errors.As(err, &invalidErr) {
		return &contract.Error{
			Class: contract.Permanent,
			Msg:   "postgres at " + p.addr + ": TLS certificate rejected",
			Hint:  "fix sslmode/sslrootcert in target.url",
			Err:   p.safe(innermost(err).Error(), err),
		}
	}
	why := innermost(err).Error()
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		why = dnsErr.Error()
	case errors.As(err, &opErr):
		why = opErr.Err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		why = "timed out after " + p.cfg.ConnectTimeout.String()
	}
	return &contract.Error{
		Class: contract.Transient,
		Msg:   "cannot reach postgres at " + p.addr,
		Hint:  "check that the server is running and reachable, then run again: the checkpoint is intact",
		Err:   p.safe(why, err),
	}
}

// poolerHint is the hint of a target reached through a connection pooler
// that idemsync cannot work through (docs/job-file.md, PostgreSQL
// connections).
const poolerHint = "target.url must reach PostgreSQL directly, or through a pooler in session mode that accepts lock_timeout and statement_timeout when connecting; a pooler in transaction mode (PgBouncer's pool_mode = transaction) is supported for the state only"

// dbError translates an error from a statement: connection loss,
// serialization failures, deadlocks, lack of resources and server shutdowns
// are transient; every other SQLSTATE and any other error permanent. The
// message carries the SQLSTATE and the server's message with the password
// scrubbed. Context errors are returned wrapped as they are.
func (p *Sink) dbError(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if e := p.waitError(op, pgErr, err); e != nil {
			return e
		}
		code := contract.Permanent
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "53"),          // insufficient resources
			pgErr.Code == "40001", pgErr.Code == "40P01", // serialization failure, deadlock
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown, starting up
			code = contract.Transient
		}
		msg := "postgres error " + pgErr.Code + ": " + pgErr.Message
		if pgErr.Detail != "" {
			msg += " (" + pgErr.Detail + ")"
		}
		hint := p.scrub(pgErr.Hint)
		if strings.HasPrefix(pgErr.Message, `prepared statement "stmtcache_`) {
			// 42P05 already exists, 26000 does not exist: a pooler in
			// transaction mode gave this session's statements to another.
			hint = poolerHint
		}
		return &contract.Error{Class: code, Msg: op, Hint: hint, Err: p.safe(msg, err)}
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) {
		return &contract.Error{
			Class: contract.Transient,
			Msg:   op + ": lost connection to postgres at " + p.addr,
			Err:   p.safe(innermost(err).Error(), err),
		}
	}
	return &contract.Error{Class: contract.Permanent, Msg: op, Err: p.safe(err.Error(), err)}
}

// safe wraps err with msg, scrubbed of the password, as its printed text.
func (p *Sink) safe(msg string, err error) error {
	return &sqlkit.SafeError{Msg: p.scrub(msg), Err: err}
}

func (p *Sink) scrub(s string) string { return sqlkit.Scrub(s, p.password) }

// innermost returns the last error of err's Unwrap chain, following the
// first branch of joined errors.
func innermost(err error) error {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				next = errs[0]
			}
		}
		if next == nil {
			return err
		}
		err = next
	}
}

// OpenTarget connects to the server of a job's target as Open does, with
// every statement bounded by c.Waits (unset: lock 30s, statement 5m). It
// fails as Open does.
func OpenTarget(ctx context.Context, c contract.Conn, logger *slog.Logger) (*Sink, error) {
	return openPostgres(ctx, c, logger)
}

// OpenRead connects to the server of a job's target to read its table
// back, as Open does (the default statement bounds). It fails as Open does.
func OpenRead(ctx context.Context, c contract.Conn, logger *slog.Logger) (*Sink, error) {
	return Open(ctx, c.URL, logger)
}
