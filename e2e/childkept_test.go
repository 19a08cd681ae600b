package e2e

import (
	"strings"
	"testing"
)

// A trigger on a child table that keeps a child row the job deletes or
// marks (PostgreSQL: BEFORE DELETE or UPDATE returning NULL; SQLite:
// RAISE(IGNORE)) leaves in the child table an element the source no longer
// lists: when a parent's array loses it (the parent's child rows are
// replaced), when a sweep removes or marks the parent, or when a tombstone
// does. The run fails (exit 1) naming the child table and the rows kept,
// and removes nothing (docs/deletions.md, "A row the table keeps"); an
// archiving trigger that lets the row go removes as before.
func TestPostgresChildKept(t *testing.T) {
	pg := postgresURL(t)
	childKept(t, func(t *testing.T, mode string) (target, table string, exec func(...string), live func() int) {
		return pgKeptTarget(t, pg, mode, "t_lines", "id IN ('2', '3')")
	}, map[string][]string{
		"keep": {`CREATE FUNCTION %s.keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
			`CREATE TRIGGER keep BEFORE DELETE OR UPDATE ON %c FOR EACH ROW WHEN (OLD.id IN ('2', '3')) EXECUTE FUNCTION %s.keep()`},
		"rule": {`CREATE RULE keep AS ON DELETE TO %c WHERE OLD.id IN ('2', '3') DO INSTEAD NOTHING`},
		"archive": {`CREATE TABLE %s.archive (id text)`,
			`CREATE FUNCTION %s.keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO %s.archive VALUES (OLD.id); IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER keep BEFORE DELETE OR UPDATE ON %c FOR EACH ROW EXECUTE FUNCTION %s.keep()`},
	})
}

// The same on SQLite.
func TestSQLiteChildKept(t *testing.T) {
	childKept(t, func(t *testing.T, mode string) (target, table string, exec func(...string), live func() int) {
		return sqliteKeptTarget(t, mode, "t_lines", "id IN ('2', '3')")
	}, map[string][]string{
		"keep": {`CREATE TRIGGER keepd BEFORE DELETE ON %c WHEN OLD.id IN ('2', '3') BEGIN SELECT RAISE(IGNORE); END`,
			`CREATE TRIGGER keepu BEFORE UPDATE ON %c WHEN OLD.id IN ('2', '3') BEGIN SELECT RAISE(IGNORE); END`},
		"archive": {`CREATE TABLE archive (id TEXT)`,
			`CREATE TRIGGER keepd BEFORE DELETE ON %c BEGIN INSERT INTO archive VALUES (OLD.id); END`,
			`CREATE TRIGGER keepu BEFORE UPDATE ON %c BEGIN INSERT INTO archive VALUES (OLD.id); END`},
	})
}

// childKept loads a (lines 1, 2) and b (line 3) into a fresh target
// (setup: the target URL, the parent table, a way to run SQL on it with %c
// the child table, and how many of the lines 2 and 3 are live), adds each
// trigger of triggers, which keeps lines 2 and 3, and drops line 2 from
// a's array, or b by two passes that miss it or by a tombstone, for
// deletes hard and soft.
func childKept(t *testing.T, setup func(t *testing.T, mode string) (target, table string, exec func(...string), live func() int), triggers map[string][]string) {
	body, srvURL := bodyServer(t, "")
	for _, mode := range []string{"hard", "soft"} {
		for _, how := range []string{"element", "sweep", "tombstone"} {
			for name, stmts := range triggers {
				if name == "rule" && (how != "element" || mode == "hard") {
					continue // an ON DELETE DO INSTEAD rule is refused under deletes: hard, and a soft table's sweep marks
				}
				t.Run(mode+"/"+how+"/"+name, func(t *testing.T) {
					body.Store(`[{"id":"a","lines":[{"id":"1"},{"id":"2"}]},{"id":"b","lines":[{"id":"3"}]}]`)
					target, table, exec, live := setup(t, mode)
					dir := t.TempDir()
					job := writeJob(t, dir, "job.yaml", `name: kept
source:
  url: `+srvURL+`
pagination:
  style: none
target:
  url: `+target+`
  table: `+table+`
  key: [id]
  deletes: `+mode+`
  tombstone: {field: gone, value: true}
  columns:
    id: id
  children:
    lines:
      path: lines
      table: t_lines
      key: id
      columns:
        id: id
`)
					runCode(t, dir, nil, 0, "run", job)
					exec(stmts...)
					passes := 1
					switch how {
					case "element":
						body.Store(`[{"id":"a","lines":[{"id":"1"}]},{"id":"b","lines":[{"id":"3"}]}]`)
					case "sweep":
						passes = 2 // the second pass to miss "b" removes it
						body.Store(`[{"id":"a","lines":[{"id":"1"},{"id":"2"}]}]`)
					case "tombstone":
						body.Store(`[{"id":"a","lines":[{"id":"1"},{"id":"2"}]},{"id":"b","gone":true}]`)
					}
					last := runPasses(t, dir, job, passes)
					got := parseRun(t, last)
					if name == "archive" {
						if last.code != 0 || live() != 1 {
							t.Fatalf("an archiving trigger returning OLD: exit %d %+v, %d of lines 2 and 3 live, want exit 0 and 1\nstderr: %s", last.code, got, live(), last.stderr)
						}
						return
					}
					if last.code != 1 || !strings.Contains(got.Error, "1 row the") || !strings.Contains(got.Error, "t_lines") {
						t.Fatalf("a trigger keeping the child row: exit %d %+v, %d of lines 2 and 3 live, want exit 1 naming the child table and the row kept\nstderr: %s", last.code, got, live(), last.stderr)
					}
					if n := live(); n != 2 {
						t.Errorf("%d of lines 2 and 3 live after the failed run, want 2 (nothing removed)", n)
					}
					if again := idemsync(t, dir, nil, "run", job, "--json"); again.code != 1 {
						t.Errorf("the run after: exit %d, want 1 while the trigger keeps the row\nstderr: %s", again.code, again.stderr)
					}
				})
			}
		}
	}
}
