package e2e

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A PostgreSQL target that is a partitioned table made by hand is refused
// when a run prepares it, naming the table and what to write to instead:
// PostgreSQL returns no system column from a partitioned table, and the
// merge tells inserts from updates by one (xmax). Before, the first load
// (COPY) succeeded and every later run failed its first page with exit 1
// on "cannot retrieve a system column in this context"
// (docs/job-file.md, "target"). One partition of it, named as the target
// once the partitioned table has idemsync's columns, is a plain table:
// loaded, re-synced and swept as any.
func TestPostgresPartitionedTarget(t *testing.T) {
	pg := postgresURL(t)
	body, srvURL := bodyServer(t, `[{"id":"a","v":"1"},{"id":"b","v":"1"},{"id":"c","v":"1"}]`)
	schema := freshSchema(t, pg)
	tbl := pgx.Identifier{schema, "t"}.Sanitize()
	pgExec(t, pg, `CREATE TABLE `+tbl+` (id text NOT NULL, v text, PRIMARY KEY (id)) PARTITION BY LIST (id)`,
		`CREATE TABLE `+pgx.Identifier{schema, "t_abc"}.Sanitize()+` PARTITION OF `+tbl+` FOR VALUES IN ('a', 'b', 'c')`)
	dir := t.TempDir()
	jobFor := func(table string) string {
		return writeJob(t, dir, table+".yaml", `name: parts_`+table+`
source:
  url: `+srvURL+`
pagination:
  style: none
target:
  url: `+pg+`
  table: `+schema+`.`+table+`
  key: [id]
  deletes: hard
  changes: true
  columns:
    id: id
    v: v
`)
	}
	r := idemsync(t, dir, nil, "run", jobFor("t"), "--json")
	if got := parseRun(t, r); r.code != 1 || !strings.Contains(got.Error, "partitioned") || !strings.Contains(got.Error, schema+".t") {
		t.Fatalf("a partitioned target: exit %d %+v, want exit 1 naming the table as partitioned\nstderr: %s", r.code, got, r.stderr)
	}
	// A partition takes no column of its own: the ones idemsync adds go on
	// the partitioned table, as the hint says.
	pgExec(t, pg, `ALTER TABLE `+tbl+` ADD COLUMN _idemsync_hash text, ADD COLUMN _idemsync_synced_at timestamptz`)
	job := jobFor("t_abc")
	rows := func() string {
		conn, err := pgx.Connect(context.Background(), pg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		r, err := conn.Query(context.Background(), "SELECT id || '=' || coalesce(v, '') FROM "+tbl)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(r, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(got)
		return strings.Join(got, " ")
	}
	if got := runCode(t, dir, nil, 0, "run", job); got.Inserted != 3 {
		t.Fatalf("first load: %+v, want 3 inserted", got)
	}
	body.Store(`[{"id":"a","v":"2"},{"id":"b","v":"1"}]`)
	if got := runCode(t, dir, nil, 0, "run", job); got.Updated != 1 || got.Unchanged != 1 {
		t.Fatalf("re-sync: %+v, want 1 updated, 1 unchanged", got)
	}
	if got := runCode(t, dir, nil, 0, "run", job); got.Deleted != 1 || got.Unchanged != 2 {
		t.Fatalf("second pass to miss c: %+v, want 1 deleted, 2 unchanged", got)
	}
	if got := rows(); got != "a=2 b=1" {
		t.Fatalf("table holds %s, want a=2 b=1", got)
	}
}
