package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A PostgreSQL table whose row security applies to the job's role (row
// level security enabled, and the role neither a superuser, nor BYPASSRLS,
// nor the table's owner unless FORCE) is refused when a run prepares it,
// naming the table and the role: a policy that hides rows hides them from
// the unchanged check, the sweep, the tombstones and --verify alike, so a
// row the source no longer lists stayed in the table, never counted, with
// exit 0 (docs/job-file.md, "target"). The owner of a table with row
// security enabled but not forced is not subject to it, and runs.
func TestPostgresRowSecurityRefused(t *testing.T) {
	pg := postgresURL(t)
	role := fmt.Sprintf("idemsync_rls_%d", time.Now().UnixNano()%1e9)
	pgExec(t, pg, `CREATE ROLE `+role+` LOGIN PASSWORD 'rls-secret'`)
	t.Cleanup(func() { // after the schemas' drops (t.Cleanup runs last first)
		conn, err := pgx.Connect(context.Background(), pg)
		if err == nil {
			_, _ = conn.Exec(context.Background(), `DROP ROLE IF EXISTS `+role)
			conn.Close(context.Background())
		}
	})
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "rls-secret")
	roleURL := u.String()
	body, srvURL := bodyServer(t, `[{"id":"a"},{"id":"b"},{"id":"c"}]`)
	for _, c := range []struct {
		name, how string
		rls       []string // %t the table
		refused   bool
	}{
		{"hidden/sweep", "sweep", []string{`ALTER TABLE %t ENABLE ROW LEVEL SECURITY`, `ALTER TABLE %t FORCE ROW LEVEL SECURITY`,
			`CREATE POLICY all_but_c ON %t USING (id <> 'c') WITH CHECK (true)`}, true},
		{"hidden/tombstone", "tombstone", []string{`ALTER TABLE %t ENABLE ROW LEVEL SECURITY`, `ALTER TABLE %t FORCE ROW LEVEL SECURITY`,
			`CREATE POLICY all_but_c ON %t USING (id <> 'c') WITH CHECK (true)`}, true},
		{"not forced", "sweep", []string{`ALTER TABLE %t ENABLE ROW LEVEL SECURITY`,
			`CREATE POLICY all_but_c ON %t USING (id <> 'c') WITH CHECK (true)`}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := freshSchema(t, pg)
			pgExec(t, pg, `GRANT USAGE, CREATE ON SCHEMA `+pgx.Identifier{schema}.Sanitize()+` TO `+role)
			tbl := pgx.Identifier{schema, "t"}.Sanitize()
			body.Store(`[{"id":"a"},{"id":"b"},{"id":"c"}]`)
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", `name: rls
source:
  url: `+srvURL+`
pagination:
  style: none
target:
  url: `+roleURL+`
  table: `+schema+`.t
  key: [id]
  deletes: hard
  tombstone: {field: gone, value: true}
  columns:
    id: id
`)
			runCode(t, dir, nil, 0, "run", job) // the role creates, and owns, the table
			stmts := make([]string, len(c.rls))
			for i, s := range c.rls {
				stmts[i] = strings.ReplaceAll(s, "%t", tbl)
			}
			pgExec(t, pg, stmts...)
			passes := 2 // the second pass to miss "c" removes it
			body.Store(`[{"id":"a"},{"id":"b"}]`)
			if c.how == "tombstone" {
				passes = 1
				body.Store(`[{"id":"a"},{"id":"b"},{"id":"c","gone":true}]`)
			}
			last := runPasses(t, dir, job, passes)
			got := parseRun(t, last)
			var rows int
			conn, err := pgx.Connect(context.Background(), pg) // a superuser: sees every row
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+tbl).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if !c.refused {
				if last.code != 0 || rows != 2 {
					t.Fatalf("row security not forced on the owner: exit %d %+v, %d rows, want exit 0 and 2 rows\nstderr: %s", last.code, got, rows, last.stderr)
				}
				return
			}
			if last.code != 1 || !strings.Contains(got.Error, "row security") || !strings.Contains(got.Error, schema+".t") || !strings.Contains(got.Error, role) {
				t.Fatalf("row security hiding c: exit %d %+v, %d rows, want exit 1 naming the table, its row security and the role\nstderr: %s", last.code, got, rows, last.stderr)
			}
			if rows != 3 {
				t.Errorf("%d rows after the refused run, want 3 (nothing removed)", rows)
			}
		})
	}
}
