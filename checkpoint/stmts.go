package checkpoint

import (
	"context"
	"database/sql"
	"sync"
)

// driverName is the database/sql driver the state file is opened with
// (a test counts the statements prepared through a wrapper of it).
var driverName = "sqlite"

// pageSQL are the statements every page's commit runs. They are prepared
// once on the Store's one connection and reused by each page's
// transaction, instead of SQLite compiling them again for every page
// (preparing them was 4–8% of the CPU of an unchanged re-sync:
// docs/performance.md, "Round four").
var pageSQL = []string{updateRunSQL, insertPageSQL, touchJobSQL, addCountersSQL}

// execer runs a statement in a transaction: a *sql.Tx, or a
// preparedTx with the Store's prepared statements.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// pageStmts are pageSQL prepared on the Store's connection, by query.
type pageStmts struct {
	mu    sync.Mutex
	ready map[string]*sql.Stmt
}

// pageStatements prepares pageSQL on first use. It must be called outside
// a transaction: the Store has one connection, which a transaction holds.
func (s *Store) pageStatements(ctx context.Context) (*pageStmts, error) {
	ps := &s.page
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ready != nil {
		return ps, nil
	}
	ready := make(map[string]*sql.Stmt, len(pageSQL))
	for _, q := range pageSQL {
		st, err := s.db.PrepareContext(ctx, q)
		if err != nil {
			closeAll(ready)
			return nil, err
		}
		ready[q] = st
	}
	ps.ready = ready
	return ps, nil
}

// close closes the prepared statements (Store.Close).
func (ps *pageStmts) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	closeAll(ps.ready)
	ps.ready = nil
}

func closeAll(stmts map[string]*sql.Stmt) {
	for _, st := range stmts {
		st.Close()
	}
}

// in returns tx running pageSQL with the prepared statements: on the
// connection they were prepared on, database/sql reuses them as they are
// (on another, after a reconnect, it prepares them again for it).
func (ps *pageStmts) in(tx *sql.Tx) preparedTx {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return preparedTx{tx, ps.ready}
}

// preparedTx is a transaction that runs the queries it holds prepared
// with those statements, and any other query as tx does.
type preparedTx struct {
	tx    *sql.Tx
	ready map[string]*sql.Stmt
}

func (p preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := p.ready[query]; ok {
		return p.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, query, args...)
}

func (p preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := p.ready[query]; ok {
		return p.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, query, args...)
}
