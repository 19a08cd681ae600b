package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// pgCancelDeadline is how long a cancelled statement may take to stop after
// the server was asked to cancel it; then the connection is closed, so a
// server that does not answer at all (a frozen backend, a dead network)
// cannot hold a run.
const pgCancelDeadline = 2 * time.Second

// pgRollbackTimeout bounds the rollback of a failed page.
const pgRollbackTimeout = 5 * time.Second

// openPostgres is Open with the target's timeouts (c.Waits).
func openPostgres(ctx context.Context, c contract.Conn, logger *slog.Logger) (*Sink, error) {
	return openPostgresConfig(ctx, c.URL, logger, func(cfg *pgx.ConnConfig) { applyWaits(cfg, c) })
}

// applyWaits bounds every wait of the session: lock_timeout and
// statement_timeout are set at connection start (and on each reconnect),
// overriding the same parameters in the URL; a cancelled context sends the
// server a cancel request at once and closes the connection when the
// server does not answer within pgCancelDeadline.
func applyWaits(cfg *pgx.ConnConfig, c contract.Conn) {
	lock, stmt := c.Waits()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(max(lock.Milliseconds(), 1), 10)
	cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(max(stmt.Milliseconds(), 1), 10)
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: pgCancelDeadline}
	}
}

// waitError translates a statement ended by lock_timeout or
// statement_timeout into a transient *contract.Error whose hint names the
// setting and the way to find the session holding the lock; nil for
// other errors.
func (p *Sink) waitError(op string, pgErr *pgconn.PgError, err error) error {
	switch pgErr.Code {
	case "55P03": // lock_not_available
		return &contract.Error{
			Class: contract.Transient,
			Msg:   fmt.Sprintf("%s: waited longer than target.timeout.lock (%s) for a lock held by another session", op, p.param("lock_timeout")),
			Hint: "another session holds a lock on the table (LOCK TABLE, ALTER TABLE, VACUUM FULL); find it with " +
				"SELECT pid, state, query FROM pg_stat_activity WHERE pid IN (SELECT unnest(pg_blocking_pids(pid)) FROM pg_stat_activity); " +
				"run again once it is gone: the checkpoint is intact",
			Err: p.safe("postgres error "+pgErr.Code+": "+pgErr.Message, err),
		}
	case "57014": // query_canceled: statement_timeout (a cancel of ours ends the run before this is read)
		return &contract.Error{
			Class: contract.Transient,
			Msg:   fmt.Sprintf("%s: statement ran longer than target.timeout.statement (%s)", op, p.param("statement_timeout")),
			Hint:  "the database is slow or blocked; raise target.timeout.statement or run again later: the checkpoint is intact",
			Err:   p.safe("postgres error "+pgErr.Code+": "+pgErr.Message, err),
		}
	}
	return nil
}

// rollbackContext bounds a rollback that must happen even when ctx was
// cancelled.
func rollbackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), pgRollbackTimeout)
}

// param returns a millisecond run-time parameter of the session as a
// duration ("30s"), or its raw text when it is not a number.
func (p *Sink) param(name string) string {
	v := p.cfg.RuntimeParams[name]
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return (time.Duration(ms) * time.Millisecond).String()
	}
	return v
}
