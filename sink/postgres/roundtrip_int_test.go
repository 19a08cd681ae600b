package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/pgtest"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/jackc/pgx/v5"
)

// statements records the first word of every statement a connection
// sends (BEGIN and COMMIT included: pgx sends them as statements).
type statements struct {
	mu    sync.Mutex
	words []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := strings.Fields(d.SQL)
	if len(w) > 0 {
		s.words = append(s.words, strings.ToLower(w[0]))
	}
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements recorded since the last take.
func (s *statements) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.words
	s.words = nil
	return w
}

// tracedSink opens a sink on the test server whose statements are
// recorded, prepared for tbl as a run's sink is.
func tracedSink(t *testing.T, url string, tbl *contract.Table) (*Sink, *statements) {
	t.Helper()
	log := &statements{}
	s, err := openPostgresConfig(context.Background(), url, nil, func(cfg *pgx.ConnConfig) { cfg.Tracer = log })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sinktest.MustPrepare(t, s, tbl)
	log.take()
	return s, log
}

// unchangedFixture is a bench table loaded with 3 pages of 100 rows, and
// a re-sync's sink (prepared again) that has written its first page:
// the table's types and whether it holds only this sink's rows are known.
func unchangedFixture(t *testing.T) (*pgx.Conn, *contract.Table, [][]contract.Row, *Sink, *statements) {
	t.Helper()
	url := pgtest.URL(t)
	conn, schema := pgtest.Schema(t, "perfpg_rt_")
	tbl := sinktest.BenchTable(schema, "rt")
	pages := sinktest.BenchPages(300, 100)
	first, _ := tracedSink(t, url, tbl)
	for _, page := range pages {
		sinktest.MustUpsert(t, first, tbl, contract.Counts{Inserted: 100}, page...)
	}
	s, log := tracedSink(t, url, tbl)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Unchanged: 100}, pages[0]...)
	log.take()
	return conn, tbl, pages, s, log
}

// An unchanged page of a table the sink knows, with no lease or state in
// the page's transaction, is one read-only statement: its keys and
// hashes checked outside any transaction, no BEGIN, no COMMIT (issue 31:
// three round trips a page, the committer's critical path). A key
// listed twice counts as Unchanged as before.
func TestUnchangedPageOneStatement(t *testing.T) {
	conn, tbl, pages, s, log := unchangedFixture(t)
	page := append(append([]contract.Row{}, pages[1]...), pages[1][7])
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Unchanged: 101}, page...)
	if got := log.take(); len(got) != 1 || got[0] != "select" {
		t.Errorf("an unchanged page sent %v, want one SELECT", got)
	}
	var locked int64
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+sinktest.QName(tbl)+" WHERE xmax <> 0").Scan(&locked); err != nil {
		t.Fatal(err)
	}
	if locked != 0 {
		t.Errorf("%d rows locked or written by unchanged pages, want none", locked)
	}
}

// A page with one changed row among unchanged ones writes that row alone,
// in a transaction, with the right counts.
func TestOneChangedRowAmongUnchanged(t *testing.T) {
	conn, tbl, pages, s, log := unchangedFixture(t)
	page := append([]contract.Row{}, pages[2]...)
	r := page[42]
	r.Values = append([]any{}, r.Values...)
	r.Values[1] = "renamed"
	r.Hash = "changed"
	page[42] = r
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 99}, page...)
	// The merge in a transaction, and no more statements than before
	// (begin, the check, the merge, commit).
	sent := log.take()
	if got := strings.Join(sent, " "); len(sent) != 4 || !strings.Contains(got, "begin") || !strings.HasSuffix(got, "insert commit") {
		t.Errorf("a page with a changed row sent %q, want 4 statements, the merge in a transaction", got)
	}
	rows, err := conn.Query(context.Background(), "SELECT id, name FROM "+sinktest.QName(tbl)+" WHERE xmax <> 0")
	if err != nil {
		t.Fatal(err)
	}
	written, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 1 || written[0][0] != r.Values[0] || written[0][1] != "renamed" {
		t.Errorf("rows written %v, want only id %v renamed", written, r.Values[0])
	}
}

// A page whose transaction carries a state's checkpoint or a lease's
// fence (UpsertIn) still runs in a transaction and calls before, even
// when every row is unchanged.
func TestUnchangedPageInTransactionWhenJoined(t *testing.T) {
	_, tbl, pages, s, log := unchangedFixture(t)
	var called *contract.Counts
	n, err := s.UpsertIn(context.Background(), tbl, pages[1], func(ctx context.Context, tx contract.PageTx, n contract.Counts) error {
		called = &n
		return tx.Fence(ctx, "perfpg", 1)
	})
	if err != nil || n.Unchanged != 100 {
		t.Fatalf("UpsertIn: %+v, %v", n, err)
	}
	if called == nil || called.Unchanged != 100 {
		t.Fatalf("before was called with %v, want 100 unchanged", called)
	}
	if got := strings.Join(log.take(), " "); !strings.HasPrefix(got, "begin") || !strings.HasSuffix(got, "commit") {
		t.Errorf("a joined unchanged page sent %q, want a transaction", got)
	}
}

// An unchanged page whose connection was lost fails Transient, and one
// whose ctx is cancelled returns the ctx's error, as in a transaction.
func TestUnchangedPageLostConnection(t *testing.T) {
	conn, tbl, pages, s, _ := unchangedFixture(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend($1)", s.conn.PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	_, err := s.Upsert(ctx, tbl, pages[1])
	if contract.ClassOf(err) != contract.Transient {
		t.Errorf("an unchanged page on a lost connection: %v (class %v), want Transient", err, contract.ClassOf(err))
	}
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Unchanged: 100}, pages[1]...) // reconnected
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Upsert(cctx, tbl, pages[2]); !errors.Is(err, context.Canceled) {
		t.Errorf("an unchanged page with a cancelled ctx: %v, want context.Canceled", err)
	}
}
