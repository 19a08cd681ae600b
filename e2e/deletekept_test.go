package e2e

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A trigger that keeps a row the job deletes or marks (PostgreSQL: BEFORE
// DELETE, or on a soft table BEFORE UPDATE, returning NULL; SQLite:
// RAISE(IGNORE)) leaves in the table a row the source no longer lists.
// The sweep, and a page's tombstones, compare the rows they meant to
// remove or mark with the rows the statement did: when fewer, the run
// fails (exit 1) naming the table and how many rows were kept, and
// removes nothing (docs/deletions.md, "A row the table keeps"). Before,
// every run exited 0 with deleted 0 and pending_deletes 1 forever. An
// archiving trigger that lets the row go (returns OLD, or NEW for the
// mark) removes as before.
func TestPostgresDeleteKept(t *testing.T) {
	pg := postgresURL(t)
	deleteKept(t, func(t *testing.T, mode string) (target, table string, exec func(...string), live func() int) {
		return pgKeptTarget(t, pg, mode, "t", "")
	}, map[string][]string{
		"keep": {`CREATE FUNCTION %s.keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
			`CREATE TRIGGER keep BEFORE %e ON %t FOR EACH ROW WHEN (OLD.id = 'c') EXECUTE FUNCTION %s.keep()`},
		"archive": {`CREATE TABLE %s.archive (id text)`,
			`CREATE FUNCTION %s.keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO %s.archive VALUES (OLD.id); IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER keep BEFORE %e ON %t FOR EACH ROW EXECUTE FUNCTION %s.keep()`},
	})
}

// The same on SQLite.
func TestSQLiteDeleteKept(t *testing.T) {
	deleteKept(t, func(t *testing.T, mode string) (target, table string, exec func(...string), live func() int) {
		return sqliteKeptTarget(t, mode, "t", "")
	}, map[string][]string{
		"keep":    {`CREATE TRIGGER keep BEFORE %e ON %t WHEN OLD.id = 'c' BEGIN SELECT RAISE(IGNORE); END`},
		"archive": {`CREATE TABLE archive (id TEXT)`, `CREATE TRIGGER keep BEFORE %e ON %t BEGIN INSERT INTO archive VALUES (OLD.id); END`},
	})
}

// pgKeptTarget is a fresh schema on pg as the target of a kept test: the
// target URL, the table schema.t, a way to run SQL on it with %s the
// schema, %t the table and %c its child table t_lines, and how many rows
// of the table counted (t or t_lines) that match where ("" for all) are
// live (under deletes: soft, not marked deleted).
func pgKeptTarget(t *testing.T, pg, mode, counted, where string) (target, table string, exec func(...string), live func() int) {
	schema := freshSchema(t, pg)
	names := strings.NewReplacer("%s", schema, "%t", pgx.Identifier{schema, "t"}.Sanitize(), "%c", pgx.Identifier{schema, "t_lines"}.Sanitize())
	query := "SELECT count(*) FROM " + pgx.Identifier{schema, counted}.Sanitize() + keptWhere(mode, where)
	live = func() int {
		conn, err := pgx.Connect(context.Background(), pg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var n int
		if err := conn.QueryRow(context.Background(), query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return pg, schema + ".t", func(stmts ...string) {
		sqls := make([]string, len(stmts))
		for i, s := range stmts {
			sqls[i] = names.Replace(s)
		}
		pgExec(t, pg, sqls...)
	}, live
}

// sqliteKeptTarget is the same on a fresh SQLite file: the table t, %t
// and %c in SQL the tables t and t_lines.
func sqliteKeptTarget(t *testing.T, mode, counted, where string) (target, table string, exec func(...string), live func() int) {
	path := filepath.Join(t.TempDir(), "out.db")
	names := strings.NewReplacer("%t", "t", "%c", "t_lines")
	query := "SELECT count(*) FROM " + counted + keptWhere(mode, where)
	var db *sql.DB
	open := func() *sql.DB {
		if db == nil {
			db = openSQLite(t, path)
		}
		return db
	}
	live = func() int {
		var n int
		if err := open().QueryRow(query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return "sqlite:" + path, "t", func(stmts ...string) {
		sqls := make([]string, len(stmts))
		for i, s := range stmts {
			sqls[i] = names.Replace(s)
		}
		execAll(t, open(), sqls...)
	}, live
}

// keptWhere is the WHERE clause of a kept test's live count: where, and
// under deletes: soft the rows not marked deleted.
func keptWhere(mode, where string) string {
	var conds []string
	if where != "" {
		conds = append(conds, where)
	}
	if mode == "soft" {
		conds = append(conds, "_idemsync_deleted_at IS NULL")
	}
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// deleteKept loads a, b and c into a fresh target (setup: the target URL,
// the table, a way to run SQL on it with %t the table and %e the event,
// and its live rows), adds each trigger of triggers, and drops c by two
// passes that miss it and by a tombstone, for deletes hard and soft.
func deleteKept(t *testing.T, setup func(t *testing.T, mode string) (target, table string, exec func(...string), live func() int), triggers map[string][]string) {
	body, srvURL := bodyServer(t, "")
	for _, mode := range []string{"hard", "soft"} {
		for _, how := range []string{"sweep", "tombstone"} {
			for name, stmts := range triggers {
				t.Run(mode+"/"+how+"/"+name, func(t *testing.T) {
					body.Store(`[{"id":"a"},{"id":"b"},{"id":"c"}]`)
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
`)
					runCode(t, dir, nil, 0, "run", job)
					event := "DELETE"
					if mode == "soft" {
						event = "UPDATE"
					}
					sqls := make([]string, len(stmts))
					for i, s := range stmts {
						sqls[i] = strings.ReplaceAll(s, "%e", event)
					}
					exec(sqls...)
					passes := 2 // the second pass to miss "c" removes it
					body.Store(`[{"id":"a"},{"id":"b"}]`)
					if how == "tombstone" {
						passes = 1
						body.Store(`[{"id":"a"},{"id":"b"},{"id":"c","gone":true}]`)
					}
					last := runPasses(t, dir, job, passes)
					got := parseRun(t, last)
					if name == "archive" {
						if last.code != 0 || got.Deleted != 1 || live() != 2 {
							t.Fatalf("an archiving trigger returning OLD: exit %d %+v, %d live rows, want exit 0, 1 deleted, 2 live\nstderr: %s", last.code, got, live(), last.stderr)
						}
						return
					}
					if last.code != 1 || !strings.Contains(got.Error, "1 row the") || !strings.Contains(got.Error, table) {
						t.Fatalf("a trigger keeping the row: exit %d %+v, want exit 1 naming the table and the row kept\nstderr: %s", last.code, got, last.stderr)
					}
					if n := live(); n != 3 {
						t.Errorf("%d live rows after the failed run, want 3 (nothing removed)", n)
					}
					if again := idemsync(t, dir, nil, "run", job, "--json"); again.code != 1 {
						t.Errorf("the run after: exit %d, want 1 while the trigger keeps the row\nstderr: %s", again.code, again.stderr)
					}
				})
			}
		}
	}
}
