package e2e

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A PostgreSQL RULE on the target rewrites what idemsync sends: one ON
// DELETE … DO INSTEAD NOTHING turned every sweep's DELETE into nothing, so
// runs exited 0 with a row the source no longer holds left live and
// "pending" forever; one ON INSERT failed every page in the database's
// words. The run is refused when it prepares the table, naming the rule
// (docs/job-file.md, "target").
func TestPostgresRuleRefused(t *testing.T) {
	pg := postgresURL(t)
	body, srvURL := bodyServer(t, `[{"id":"a"},{"id":"b"},{"id":"c"}]`)
	for name, rule := range map[string]string{
		"delete": `CREATE RULE keep_all AS ON DELETE TO %s DO INSTEAD NOTHING`,
		"insert": `CREATE RULE keep_all AS ON INSERT TO %s DO INSTEAD NOTHING`,
	} {
		t.Run(name, func(t *testing.T) {
			body.Store(`[{"id":"a"},{"id":"b"},{"id":"c"}]`)
			schema := freshSchema(t, pg)
			table := pgx.Identifier{schema, "t"}.Sanitize()
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", `name: rules
source:
  url: `+srvURL+`
pagination:
  style: none
target:
  url: `+pg+`
  table: `+schema+`.t
  key: [id]
  deletes: hard
  columns:
    id: id
`)
			runCode(t, dir, nil, 0, "run", job)
			pgExec(t, pg, strings.ReplaceAll(rule, "%s", table))
			body.Store(`[{"id":"a"},{"id":"b"}]`)
			last := runPasses(t, dir, job, 2) // the second pass to miss "c" removes it
			got := parseRun(t, last)
			if last.code != 1 || !strings.Contains(got.Error, "keep_all") {
				t.Fatalf("a rule on the target: exit %d %+v, want exit 1 naming the rule\nstderr: %s", last.code, got, last.stderr)
			}
		})
	}
}
