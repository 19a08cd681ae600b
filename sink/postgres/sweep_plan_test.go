package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/pgtest"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// The sweep's statements stay linear in the table: on a table the
// planner has no statistics for yet (a first load's, before autovacuum
// analyzes it), it guessed a few hundred rows missed by this pass where
// 1,000 were, and joined them to the prior pass's keys by a nested loop
// scanning all 100,000 of them once per row: 5 s for a 100,000-row table
// with 1% gone, quadratic in its size. Under the sweep's planner settings
// (sweepPlanner) no statement of the sweep joins by a nested loop.
func TestSweepStatementsJoinByHash(t *testing.T) {
	ctx := context.Background()
	conn, schema := pgtest.Schema(t, "sweep_plan_")
	const rows = 100000
	for _, mode := range []string{contract.DeletesHard, contract.DeletesSoft} {
		t.Run(mode, func(t *testing.T) {
			tbl := &contract.Table{Schema: schema, Name: "t_" + mode, Key: []string{"id"}, Deletes: mode,
				Columns: []contract.Column{{Name: "id", Type: contract.TypeInteger}}}
			q := sqlkit.QuoteTable(tbl)
			if _, err := conn.Exec(ctx, `CREATE TABLE `+q+` (id bigint PRIMARY KEY, _idemsync_hash text,
				_idemsync_synced_at timestamptz, _idemsync_deleted_at timestamptz)`); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, `INSERT INTO `+q+` SELECT g, 'h', now() - interval '1 hour' FROM generate_series(1, $1) g`, rows); err != nil {
				t.Fatal(err)
			}
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			if err := sweepPlanner(ctx, tx); err != nil {
				t.Fatal(err)
			}
			types := map[string]string{"id": "bigint"}
			keys := func(skip int) func(func(string) error) error { // every key, or all but each skip-th
				return func(fn func(string) error) error {
					for i := 1; i <= rows; i++ {
						if skip > 0 && i%skip == 0 {
							continue
						}
						k, err := sqlkit.AppendKey(nil, []any{strconv.Itoa(i)})
						if err != nil {
							return err
						}
						if err := fn(string(k)); err != nil {
							return err
						}
					}
					return nil
				}
			}
			p := &Sink{}
			if err := p.loadKeys(ctx, tx, seenTable, tbl, types, keys(100)); err != nil {
				t.Fatal(err)
			}
			if err := p.loadKeys(ctx, tx, priorTable, tbl, types, keys(0)); err != nil {
				t.Fatal(err)
			}
			for _, stmt := range []string{
				`SELECT count(*) FROM ` + q + ` AS "_t" WHERE ` + missedWhere(tbl),
				`SELECT count(*) FROM ` + q + ` AS "_t" WHERE ` + goneWhere(tbl) + ` AND ` + writtenBefore(2),
				`DELETE FROM ` + q + ` AS "_t" WHERE ` + goneWhere(tbl),
			} {
				var args []any
				for n := 1; strings.Contains(stmt, "$"+strconv.Itoa(n)); n++ {
					args = append(args, time.Now())
				}
				plan := explain(t, tx, stmt, args)
				if strings.Contains(plan, "Nested Loop") {
					t.Errorf("the sweep's statement joins by a nested loop:\n%s\n%s", stmt, plan)
				}
			}
		})
	}
}

// explain returns the plan of stmt with args in tx, one node a line.
func explain(t *testing.T, tx pgx.Tx, stmt string, args []any) string {
	t.Helper()
	rs, err := tx.Query(context.Background(), "EXPLAIN "+stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var b strings.Builder
	for rs.Next() {
		var line string
		if err := rs.Scan(&line); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, line)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
