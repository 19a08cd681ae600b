package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// A SQLite table made by hand whose column or table constraint carries
// ON CONFLICT IGNORE or REPLACE (NOT NULL ON CONFLICT IGNORE, UNIQUE ON
// CONFLICT REPLACE on a column other than the key) drops a record's row,
// stores another value than the record's, or deletes another live row,
// with no trigger and no error: it is refused when a run prepares the
// table, naming the column and the clause (docs/job-file.md, "target").
// A constraint whose conflict is an error (the default ABORT) is kept.
func TestSQLiteConflictClauseRefused(t *testing.T) {
	body, srvURL := bodyServer(t, "")
	for name, c := range map[string]struct{ ddl, column string }{
		"not null ignore":  {`CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT NOT NULL ON CONFLICT IGNORE)`, `"v"`},
		"not null replace": {`CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT NOT NULL ON CONFLICT REPLACE DEFAULT 'z')`, `"v"`},
		"unique ignore":    {`CREATE TABLE t (id TEXT PRIMARY KEY, "v" TEXT UNIQUE ON CONFLICT IGNORE)`, `"v"`},
		"unique replace":   {`CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT, CONSTRAINT one_v UNIQUE (v) ON CONFLICT REPLACE)`, `one_v`},
		"abort":            {`CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT CHECK (v <> 'x on conflict ignore'), "on conflict replace" TEXT UNIQUE ON CONFLICT ABORT) -- on conflict ignore`, ``},
	} {
		t.Run(name, func(t *testing.T) {
			body.Store(`[{"id":"a","v":"x"},{"id":"b","v":null},{"id":"c","v":"x"}]`)
			dir, job := conflictJob(t, c.ddl, srvURL, `
    v: v
`)
			if c.column == "" {
				runCode(t, dir, nil, 0, "run", job)
				return
			}
			r := idemsync(t, dir, nil, "run", job, "--json")
			got := parseRun(t, r)
			if r.code != 1 || !strings.Contains(got.Error, c.column) || !strings.Contains(got.Error, "ON CONFLICT") {
				t.Fatalf("%s: exit %d %+v, table %v, want exit 1 naming %s and its ON CONFLICT clause\nstderr: %s", c.ddl, r.code, got, dump(t, filepath.Join(dir, "out.db")), c.column, r.stderr)
			}
		})
	}
}

// conflictJob makes the SQLite file out.db in a fresh folder with ddl and
// writes there a job loading the records at srvURL into its table t, keyed
// and filled by id, its target ending with more; it returns the folder and
// the job.
func conflictJob(t *testing.T, ddl, srvURL, more string) (dir, job string) {
	t.Helper()
	dir = t.TempDir()
	execAll(t, openSQLite(t, filepath.Join(dir, "out.db")), ddl)
	return dir, writeJob(t, dir, "job.yaml", `name: conflict
source:
  url: `+srvURL+`
pagination:
  style: none
target:
  url: sqlite:out.db
  table: t
  key: [id]
  columns:
    id: id`+more)
}

// dump is the rows of t in the SQLite file path, as id=v.
func dump(t *testing.T, path string) []string {
	rows, err := openSQLite(t, path).Query(`SELECT id, coalesce(v, 'NULL') FROM t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, id+"="+v)
	}
	return out
}

// A child table made by hand is prepared like the job's own table: its
// ON CONFLICT IGNORE or REPLACE is refused the same way, naming the
// column or constraint (docs/job-file.md, "target").
func TestSQLiteChildConflictClauseRefused(t *testing.T) {
	_, srvURL := bodyServer(t, `[{"id":"a","lines":[{"id":"1","v":"x"},{"id":"2","v":null},{"id":"3","v":"x"}]}]`)
	for name, c := range map[string]struct{ ddl, column string }{
		"not null ignore": {`CREATE TABLE t_lines (t_id TEXT NOT NULL, id TEXT NOT NULL, v TEXT NOT NULL ON CONFLICT IGNORE, PRIMARY KEY (t_id, id))`, `"v"`},
		"unique replace":  {`CREATE TABLE t_lines (t_id TEXT NOT NULL, id TEXT NOT NULL, v TEXT, PRIMARY KEY (t_id, id), CONSTRAINT one_v UNIQUE (v) ON CONFLICT REPLACE)`, `one_v`},
	} {
		t.Run(name, func(t *testing.T) {
			dir, job := conflictJob(t, c.ddl, srvURL, `
  children:
    lines:
      path: lines
      table: t_lines
      key: id
      columns:
        id: id
        v: v
`)
			r := idemsync(t, dir, nil, "run", job, "--json")
			got := parseRun(t, r)
			if r.code != 1 || !strings.Contains(got.Error, "t_lines") || !strings.Contains(got.Error, c.column) || !strings.Contains(got.Error, "ON CONFLICT") {
				t.Fatalf("%s: exit %d %+v, want exit 1 naming t_lines, %s and its ON CONFLICT clause\nstderr: %s", c.ddl, r.code, got, c.column, r.stderr)
			}
		})
	}
}
