package postgres_test

import (
	"bytes"
	"context"
	"net"
	"net/url"
	"reflect"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/pgtest"
	"github.com/idemsync/idemsync/sink/postgres"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/jackc/pgx/v5"
)

// tripProxy is a TCP proxy in front of PostgreSQL that forwards everything
// until the client sends a statement whose text is trigger; then it cuts
// that connection (a lost connection) or, with freeze, stops forwarding on
// it (a frozen server, a dead network) until the test ends.
type tripProxy struct {
	addr    string
	trigger []byte
	freeze  bool
	done    chan struct{}
	stop    func() // ends every connection; then the listener
	mu      gosync.Mutex
	tripped bool
}

func startTripProxy(t *testing.T, target, trigger string, freeze bool) *tripProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tripProxy{addr: l.Addr().String(), trigger: append([]byte(trigger), 0), freeze: freeze, done: make(chan struct{})}
	var once gosync.Once
	tp.stop = func() { once.Do(func() { close(tp.done); l.Close() }) }
	t.Cleanup(tp.stop)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go tp.serve(c, target)
		}
	}()
	return tp
}

func (tp *tripProxy) wasTripped() bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.tripped
}

func (tp *tripProxy) serve(c net.Conn, target string) {
	s, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	closeBoth := func() { c.Close(); s.Close() }
	go func() {
		<-tp.done
		closeBoth()
	}()
	go func() {
		defer closeBoth()
		buf := make([]byte, 32<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 && bytes.Contains(buf[:n], tp.trigger) {
				tp.mu.Lock()
				tp.tripped = true
				tp.mu.Unlock()
				if tp.freeze {
					<-tp.done
				}
				return
			}
			if n > 0 {
				if _, werr := s.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if !tp.freeze {
		closeBoth()
	}
}

// tripSink opens a sink through a tripProxy on a table of its own schema.
// It returns the sink, the proxy and the table.
func tripSink(t *testing.T, trigger string, freeze bool) (*postgres.Sink, *tripProxy, *contract.Table) {
	t.Helper()
	raw := pgtest.URL(t)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Skip("the test server URL is not a postgres://host:port URL")
	}
	conn, schema := pgtest.Schema(t, "pgtx_")
	tbl := &contract.Table{Schema: schema, Name: "items", Key: []string{"id"},
		Columns: []contract.Column{{Name: "id", Path: "id", Type: contract.TypeInteger}}}
	if _, err := conn.Exec(context.Background(), `CREATE TABLE `+sinktest.QName(tbl)+` (id bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	tp := startTripProxy(t, u.Host, trigger, freeze)
	proxied := *u
	proxied.Host = tp.addr
	s, err := postgres.OpenTarget(context.Background(), contract.Conn{URL: proxied.String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The proxy first: a call that still waits on it holds the sink.
	t.Cleanup(func() { tp.stop(); s.Close() })
	return s, tp, tbl
}

// A connection lost when TableState commits is a lost connection like any
// other: Transient, naming what was being done, never an unclassified
// driver error (which counts as Permanent).
func TestPostgresTableStateCommitLost(t *testing.T) {
	s, tp, tbl := tripSink(t, "commit", false)
	_, _, err := s.TableState(context.Background(), tbl)
	if !tp.wasTripped() {
		t.Fatalf("TableState never committed (err %v)", err)
	}
	if err == nil {
		t.Fatal("TableState succeeded although its commit lost the connection")
	}
	if got := contract.ClassOf(err); got != contract.Transient {
		t.Errorf("class %v, want Transient: %v", got, err)
	}
	if want := "read table state " + tbl.String(); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// TableState rolls back its transaction, when the table is locked by
// another session, within the bound every rollback has: a server that
// stops answering at that moment cannot hold the run.
func TestPostgresTableStateRollbackBounded(t *testing.T) {
	s, tp, tbl := tripSink(t, "rollback", true)
	ctx := context.Background()
	locker, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `LOCK TABLE `+sinktest.QName(tbl)+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		exists, empty bool
		err           error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		exists, empty, err := s.TableState(ctx, tbl)
		done <- result{exists, empty, err}
	}()
	select {
	case r := <-done:
		if !tp.wasTripped() {
			t.Fatalf("TableState never rolled back: %+v", r)
		}
		if r.err != nil || !r.exists || r.empty {
			t.Errorf("TableState of a locked table = exists %v, empty %v, %v; want true, false, nil", r.exists, r.empty, r.err)
		}
		t.Logf("returned after %v", time.Since(start))
	case <-time.After(30 * time.Second):
		t.Fatalf("TableState still waits %v after it started, its rollback unanswered (tripped %v)", time.Since(start), tp.wasTripped())
	}
}

// A connection lost when a page commits fails the page Transient, naming
// the table, with no counts and no row committed (docs/guarantees.md,
// "One transaction per page").
func TestPostgresUpsertCommitLost(t *testing.T) {
	s, tp, tbl := tripSink(t, "commit", false)
	page := *tbl
	page.Name, page.Create = "pages", true
	page.Columns = append(page.Columns, contract.Column{Name: "v", Path: "v", Type: contract.TypeText})
	ctx := context.Background()
	direct, err := postgres.OpenTarget(ctx, contract.Conn{URL: pgtest.URL(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	sinktest.MustPrepare(t, direct, &page) // its commit not through the proxy
	n, err := s.Upsert(ctx, &page, []contract.Row{sinktest.Row(int64(1), "a"), sinktest.Row(int64(2), "b")})
	if !tp.wasTripped() {
		t.Fatalf("the page never committed: %+v, %v", n, err)
	}
	if got := contract.ClassOf(err); got != contract.Transient {
		t.Errorf("class %v, want Transient: %v", got, err)
	}
	if want := "upsert into " + page.String(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v does not say %q", err, want)
	}
	if !reflect.DeepEqual(n, contract.Counts{}) {
		t.Errorf("counts %+v returned with the error, want none", n)
	}
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+sinktest.QName(&page)).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Errorf("%d rows committed by a page whose commit was lost", rows)
	}
}
