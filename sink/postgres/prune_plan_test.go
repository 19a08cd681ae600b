package postgres

import (
	"context"
	"strconv"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/pgtest"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// The DELETE of changed parents' child rows is planned for the child
// table as it is when it runs, not as it was when first run: a child
// table that was small for its first pages and then grew (a re-sync
// whose parents change while their arrays grow, before autovacuum
// analyzes it) kept PostgreSQL's generic plan made while it was small, a
// sequential scan of the whole child table per page, quadratic in the
// run (docs/performance.md, "Child tables"). Counted by the sequential
// scans of the child table in the page's transaction.
func TestPruneChildrenPlannedAtTheTablesSize(t *testing.T) {
	ctx := context.Background()
	conn, schema := pgtest.Schema(t, "prune_plan_")
	lines := contract.Child{Name: "lines", Root: []string{"orders_id"}, Table: contract.Table{Schema: schema, Name: "lines",
		Key: []string{"orders_id", "id"}, Columns: []contract.Column{{Name: "orders_id", Type: contract.TypeInteger}, {Name: "id", Type: contract.TypeInteger}}}}
	tbl := &contract.Table{Schema: schema, Name: "orders", Key: []string{"id"}, Columns: []contract.Column{{Name: "id", Type: contract.TypeInteger}},
		Children: []contract.Child{lines}}
	q := sqlkit.QuoteTable(&lines.Table)
	// Autovacuum's ANALYZE would replan it and hide what a busy server
	// that has not analyzed the table yet does.
	if _, err := conn.Exec(ctx, `CREATE TABLE `+q+` (orders_id bigint, id bigint, PRIMARY KEY (orders_id, id)) WITH (autovacuum_enabled = off);
		INSERT INTO `+q+` SELECT g, 1 FROM generate_series(1, 20) g`); err != nil {
		t.Fatal(err)
	}
	p := &Sink{}
	types := map[string]string{"id": "bigint"}
	page := func(from int) (seqScans, seqRead int64) {
		t.Helper()
		roots := make([]contract.Row, 100)
		for i := range roots {
			roots[i] = contract.Row{Values: []any{int64(from + i)}}
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		// The view also holds the counts of this connection's earlier
		// transactions not yet flushed (PostgreSQL 15 flushes them at most
		// once a second), so the statement's own scans are the difference.
		scans := func() (n, read int64) {
			if err := tx.QueryRow(ctx, `SELECT seq_scan, seq_tup_read FROM pg_stat_xact_user_tables WHERE relid = $1::regclass`, q).Scan(&n, &read); err != nil {
				t.Fatal(err)
			}
			return n, read
		}
		scans0, read0 := scans()
		var n contract.Counts
		if err := p.pruneTree(ctx, tx, "prune", tbl, types, roots, false, &n); err != nil {
			t.Fatal(err)
		}
		seqScans, seqRead = scans()
		seqScans, seqRead = seqScans-scans0, seqRead-read0
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return seqScans, seqRead
	}
	for i := range 10 { // small: the pages a plan cache decides on
		page(1_000_000 + 100*i)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO `+q+` SELECT g / 5, g FROM generate_series(100, 200000) g`); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if scans, read := page(100 * i); scans != 0 {
			t.Fatalf("page %d after the child table grew to 200,000 rows: %d sequential scans of it reading %s rows; want its index probed",
				i, scans, strconv.FormatInt(read, 10))
		}
	}
}
