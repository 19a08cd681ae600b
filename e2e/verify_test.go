package e2e

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// execAll runs statements on db, failing t on the first error.
func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// verifyTwice runs the job with --verify and wants updated rows rewritten
// and the table equal to the source (read), then again with nothing to do.
func verifyTwice(t *testing.T, dir, job string, updated int64, read func() map[int]row, api *fakeapi.API, args ...string) {
	t.Helper()
	first := runCode(t, dir, nil, 0, append([]string{"run", job, "--verify"}, args...)...)
	if first.Status != "completed" || first.Updated != updated || first.Inserted != 0 || first.Unchanged != first.Records-updated {
		t.Errorf("verify run: %+v, want completed with %d updated, the rest unchanged", first, updated)
	}
	assertEqualSource(t, read(), sourceRows(api))
	second := runCode(t, dir, nil, 0, append([]string{"run", job, "--verify"}, args...)...)
	if second.Status != "completed" || second.Updated != 0 || second.Inserted != 0 {
		t.Errorf("second verify run: %+v, want 0 updated", second)
	}
}

// run --verify on SQLite: rows edited by hand (hash left as it was) are
// missed by a plain run, rewritten by a verify run and counted as updated;
// a second verify run finds nothing. Replay --verify checks its range.
func TestVerifySQLite(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 200, Seed: 5})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	if r := runCode(t, dir, nil, 0, "run", job); r.Inserted != 200 {
		t.Fatalf("first run: %+v", r)
	}
	path := dir + "/out.db"
	read := func() map[int]row { return readSQLite(t, path) }
	db := openSQLite(t, path)
	t.Run("hand edits", func(t *testing.T) {
		execAll(t, db,
			`UPDATE orders SET name = 'Mallory' WHERE id = 3`,
			`UPDATE orders SET total = '0' WHERE id = 50`,
			`UPDATE orders SET active = NOT active, tags = '["x"]' WHERE id = 101`,
			`UPDATE orders SET email = CAST(email AS BLOB) WHERE id = 150`, // same bytes, another type
			`UPDATE orders SET updated_at = substr(updated_at, 1, 19) || 'Z' WHERE id = 199`)
		if r := runCode(t, dir, nil, 0, "run", job); r.Updated != 0 {
			t.Fatalf("a plain run should not see hand edits (hash unchanged): %+v", r)
		}
		verifyTwice(t, dir, job, 5, read, api)
	})
	t.Run("dropped and re-added column", func(t *testing.T) {
		execAll(t, db, `ALTER TABLE orders DROP COLUMN email`, `ALTER TABLE orders ADD COLUMN email TEXT`)
		verifyTwice(t, dir, job, 200, read, api)
	})
	t.Run("replay", func(t *testing.T) {
		execAll(t, db, `UPDATE orders SET name = 'Mallory' WHERE id IN (1, 2, 199)`)
		r := runCode(t, dir, nil, 0, "replay", job, "--from", "1", "--to", "1", "--verify")
		if r.Updated != 2 || r.Records != 25 {
			t.Errorf("replay of page 1 with --verify: %+v, want 2 updated of 25", r)
		}
		verifyTwice(t, dir, job, 1, read, api)
	})
}

// An hwm job reads from its saved mark: run --verify --restart checks the
// whole range.
func TestVerifyIncrementalRestart(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 120, Seed: 6})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("hwm", url, "sqlite:out.db"))
	runCode(t, dir, nil, 0, "run", job)
	path := dir + "/out.db"
	execAll(t, openSQLite(t, path), `UPDATE orders SET name = 'Mallory' WHERE id IN (1, 60, 120)`)
	verifyTwice(t, dir, job, 3, func() map[int]row { return readSQLite(t, path) }, api, "--restart")
}

// run --verify on PostgreSQL: hand edits and a dropped column are
// rewritten; a column narrowed so that it can no longer hold the source's
// values fails the verify run (exit 1) naming table, column and key, and
// once widened again the verify run restores the rounded values.
func TestVerifyPostgres(t *testing.T) {
	pg := postgresURL(t)
	api, url := startAPI(t, fakeapi.Options{Records: 200, Seed: 7})
	schema := freshSchema(t, pg)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", pgJob("page", url, pg, schema))
	runCode(t, dir, nil, 0, "run", job)
	table := pgx.Identifier{schema, "orders"}
	read := func() map[int]row { return readPostgres(t, pg, table) }
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(t *testing.T, stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := conn.Exec(ctx, strings.ReplaceAll(q, "{t}", table.Sanitize())); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	t.Run("hand edits", func(t *testing.T) {
		exec(t, `UPDATE {t} SET name = 'Mallory' WHERE id = 3`,
			`UPDATE {t} SET total = total + 1 WHERE id = 50`,
			`UPDATE {t} SET active = NOT active, tags = '["x"]' WHERE id = 101`,
			`UPDATE {t} SET updated_at = updated_at + interval '1 microsecond' WHERE id = 199`)
		if r := runCode(t, dir, nil, 0, "run", job); r.Updated != 0 {
			t.Fatalf("a plain run should not see hand edits (hash unchanged): %+v", r)
		}
		verifyTwice(t, dir, job, 4, read, api)
	})
	t.Run("dropped and re-added column", func(t *testing.T) {
		exec(t, `ALTER TABLE {t} DROP COLUMN email`, `ALTER TABLE {t} ADD COLUMN email text`)
		verifyTwice(t, dir, job, 200, read, api)
	})
	t.Run("narrowed column", func(t *testing.T) {
		// lost: values numeric(12,1) cannot hold; reformed: values whose
		// stored form it changes (12.30 becomes 12.3), all rewritten later.
		var lost, reformed int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE total <> round(total, 1)),
			count(*) FILTER (WHERE total::text <> round(total, 1)::text) FROM `+table.Sanitize()).Scan(&lost, &reformed); err != nil || lost == 0 {
			t.Fatalf("rows with two decimals: %d, %v", lost, err)
		}
		exec(t, `ALTER TABLE {t} ALTER COLUMN total TYPE numeric(12,1)`)
		r := runCode(t, dir, nil, 1, "run", job, "--verify")
		t.Logf("narrowed column: %s", r.Error)
		for _, want := range []string{"orders", `column \"total\"`, "numeric(12,1)", "record with key id="} {
			if !strings.Contains(r.Error, strings.ReplaceAll(want, `\"`, `"`)) {
				t.Errorf("error %q does not name %s", r.Error, want)
			}
		}
		exec(t, `ALTER TABLE {t} ALTER COLUMN total TYPE numeric`)
		// The failed run is continued from its first page: one run.
		verifyTwice(t, dir, job, reformed, read, api)
	})
}

// run --verify continuing an unfinished run checks the pages it reads,
// not those committed before it: it says so on stderr (with the way to
// check them all) rather than passing them over in silence, and
// run --verify --restart does check them (docs/operations.md, "Verify").
func TestVerifyContinuedRunWarns(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 100, Seed: 5})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	if r := runCode(t, dir, nil, 0, "run", job, "--max-pages", "2"); r.Status != "partial" {
		t.Fatalf("run --max-pages 2: %+v", r)
	}
	path := dir + "/out.db"
	execAll(t, openSQLite(t, path), `UPDATE orders SET name = 'Mallory' WHERE id = 3`)
	res := idemsync(t, dir, nil, "run", job, "--verify", "--json")
	if r := parseRun(t, res); res.code != 0 || r.Status != "completed" || !strings.Contains(res.stdout, `"resumed":true`) {
		t.Fatalf("run --verify continuing the partial run: exit %d, %+v\n%s", res.code, r, res.stdout)
	}
	if !strings.Contains(res.stderr, "level=WARN") || !strings.Contains(res.stderr, "--verify --restart") {
		t.Errorf("run --verify continued at page 3 without a warning that pages 1-2 were not checked:\n%s", res.stderr)
	}
	if got := readSQLite(t, path)[3].name; got != "Mallory" {
		t.Fatalf("row 3 (page 1) is %q: the continued run read page 1", got)
	}
	res = idemsync(t, dir, nil, "run", job, "--verify", "--json")
	if strings.Contains(res.stderr, "level=WARN") {
		t.Errorf("a new run --verify (nothing to continue) warned:\n%s", res.stderr)
	}
	verifyTwice(t, dir, job, 0, func() map[int]row { return readSQLite(t, path) }, api)
}

// run --verify of a PostgreSQL table nobody touched writes nothing: no
// row is rewritten or locked (xmin and xmax as before), as an unchanged
// re-sync; a hand edit is then rewritten alone (docs/operations.md,
// "Verify").
func TestVerifyPostgresUntouchedLocksNothing(t *testing.T) {
	pg := postgresURL(t)
	api, url := startAPI(t, fakeapi.Options{Records: 60, Seed: 8})
	schema := freshSchema(t, pg)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", pgJob("page", url, pg, schema))
	runCode(t, dir, nil, 0, "run", job)
	runCode(t, dir, nil, 0, "run", job) // rows merged into a table holding rows
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	table := pgx.Identifier{schema, "orders"}.Sanitize()
	versions := func() string {
		var s string
		if err := conn.QueryRow(ctx, `SELECT string_agg(id || ':' || xmin || ':' || xmax, ',' ORDER BY id) FROM `+table).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := versions()
	if r := runCode(t, dir, nil, 0, "run", job, "--verify"); r.Updated != 0 || r.Unchanged != 60 {
		t.Fatalf("run --verify of an untouched table: %+v", r)
	}
	if after := versions(); after != before {
		t.Errorf("run --verify of an untouched table wrote or locked rows:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := conn.Exec(ctx, `UPDATE `+table+` SET name = 'Mallory' WHERE id = 7`); err != nil {
		t.Fatal(err)
	}
	verifyTwice(t, dir, job, 1, func() map[int]row { return readPostgres(t, pg, pgx.Identifier{schema, "orders"}) }, api)
}
