package checkpoint

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/idemsync/idemsync/contract"
	sqlite "modernc.org/sqlite"
)

// prepares counts the statements the "sqlite-counting" driver prepared.
var prepares atomic.Int64

func init() { sql.Register("sqlite-counting", countingDriver{&sqlite.Driver{}}) }

// countingDriver is the SQLite driver with its connections' fast paths
// (ExecerContext, QueryerContext) hidden, so that database/sql prepares
// every statement it runs, and counts the preparations.
type countingDriver struct{ d driver.Driver }

func (c countingDriver) Open(name string) (driver.Conn, error) {
	conn, err := c.d.Open(name)
	if err != nil {
		return nil, err
	}
	return countingConn{conn}, nil
}

type countingConn struct{ driver.Conn }

func (c countingConn) Prepare(query string) (driver.Stmt, error) {
	prepares.Add(1)
	return c.Conn.Prepare(query)
}

// TestCommitPageReusesStatements: a run's pages are committed with the
// statements prepared for its first page, not prepared again per page
// (docs/performance.md, "Round four"). Failed first with 4 statements
// prepared per page after the first.
func TestCommitPageReusesStatements(t *testing.T) {
	driverName = "sqlite-counting"
	t.Cleanup(func() { driverName = "sqlite" })
	s := openTemp(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p0", Next: "p1", Records: 3, Inserted: 3})
	before := prepares.Load()
	const pages = 10
	for i := 1; i <= pages; i++ {
		commit(t, s, "orders", contract.PageCommit{RunID: id, Position: fmt.Sprint("p", i), Next: fmt.Sprint("p", i+1), Records: 3, Updated: 1, Unchanged: 2})
	}
	if n := prepares.Load() - before; n != 0 {
		t.Errorf("%d pages after the first prepared %d statements, want 0", pages, n)
	}
	r := mustRun(t, s, "orders", id)
	if r.Pages != pages+1 || r.Records != 3*(pages+1) || r.Inserted != 3 || r.Updated != pages || r.Unchanged != 2*pages || r.Checkpoint != fmt.Sprint("p", pages+1) {
		t.Errorf("run after %d pages: %+v", pages+1, r)
	}
}
