package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A target put back from an older backup while the state kept its
// progress is behind the state's progress marker: the next run starts from
// the beginning instead of from the saved mark or the unfinished run's
// checkpoint, and exit 0 leaves no hole (docs/guarantees.md, "Job
// identity"; docs/fault-tolerance.md, "A changed job file, a lost target").
func TestRestoredTargetIsNotSkippedOver(t *testing.T) {
	for _, c := range []struct {
		style string
		// before is the run whose target is backed up; after moves the
		// state past it (a partial run leaves the page job unfinished).
		before, after []string
	}{
		{"hwm", []string{"--max-pages", "4"}, nil},
		{"page", []string{"--max-pages", "2"}, []string{"--max-pages", "6"}},
	} {
		t.Run("sqlite-"+c.style, func(t *testing.T) {
			api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 5})
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", styleJob(c.style, url, "sqlite:out.db"))
			out := filepath.Join(dir, "out.db")
			runCode(t, dir, nil, 0, append([]string{"run", job}, c.before...)...)
			backup := filepath.Join(dir, "backup.db")
			vacuumInto(t, out, backup)
			runCode(t, dir, nil, 0, append([]string{"run", job}, c.after...)...)
			restoreSQLite(t, backup, out)
			r := idemsync(t, dir, nil, "run", job, "--json")
			if r.code != 0 || parseRun(t, r).Status != "completed" {
				t.Fatalf("run over the restored target: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "restored") {
				t.Errorf("the run does not say why it started from the beginning:\n%s", r.stderr)
			}
			assertEqualSource(t, readSQLite(t, out), sourceRows(api))
		})
	}
	for _, c := range []struct {
		style         string
		before, after []string
	}{
		{"hwm", []string{"--max-pages", "4"}, nil},
		{"page", []string{"--max-pages", "2"}, []string{"--max-pages", "6"}},
	} {
		t.Run("postgres-"+c.style, func(t *testing.T) {
			pg := postgresURL(t)
			api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 6})
			schema := freshSchema(t, pg)
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", pgJob(c.style, url, pg, schema))
			runCode(t, dir, nil, 0, append([]string{"run", job}, c.before...)...)
			backup := copySchema(t, pg, schema)
			runCode(t, dir, nil, 0, append([]string{"run", job}, c.after...)...)
			restoreSchema(t, pg, backup, schema)
			r := idemsync(t, dir, nil, "run", job, "--json")
			if r.code != 0 || parseRun(t, r).Status != "completed" {
				t.Fatalf("run over the restored target: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			assertEqualSource(t, readPostgres(t, pg, pgx.Identifier{schema, "orders"}), sourceRows(api))
		})
	}
}

// vacuumInto writes a consistent copy of the SQLite file src to dst, as
// `sqlite3 src ".backup dst"` does.
func vacuumInto(t *testing.T, src, dst string) {
	t.Helper()
	db := openSQLite(t, src)
	if _, err := db.Exec(`VACUUM INTO ?`, dst); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// restoreSQLite puts the backup back over the target file.
func restoreSQLite(t *testing.T, backup, target string) {
	t.Helper()
	for _, p := range []string{target + "-wal", target + "-shm"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// copySchema copies every table of schema (structure, keys and rows) into
// a new schema, as a dump of it would keep them, and returns its name.
func copySchema(t *testing.T, pg, schema string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	backup := schema + "_bk"
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{backup}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), pg)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{backup}.Sanitize()+" CASCADE")
			c.Close(context.Background())
		}
	})
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`, schema)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range tables {
		from, to := pgx.Identifier{schema, name}.Sanitize(), pgx.Identifier{backup, name}.Sanitize()
		if _, err := conn.Exec(ctx, "CREATE TABLE "+to+" (LIKE "+from+" INCLUDING ALL)"); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO "+to+" SELECT * FROM "+from); err != nil {
			t.Fatal(err)
		}
	}
	return backup
}

// restoreSchema replaces schema by its copy backup.
func restoreSchema(t *testing.T, pg, backup, schema string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ALTER SCHEMA "+pgx.Identifier{backup}.Sanitize()+" RENAME TO "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
}

// What must not be taken for a restore: a target ahead of the state (a
// kill between the target's commit and the state's, or a state put back
// from an older backup) is continued, and a target whose markers are gone
// (written by an earlier version, or their table dropped by hand) is
// adopted, neither starting from the beginning (docs/guarantees.md, "Job
// identity").
func TestRestoredTargetAheadOrUnmarked(t *testing.T) {
	t.Run("crash-window", func(t *testing.T) {
		api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 7})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", styleJob("hwm", url, "sqlite:out.db"))
		if err := runKilled(t, dir, job, "IDEMSYNC_TEST_FAILPOINT=target-committed:3"); err != nil {
			t.Fatal(err)
		}
		r := idemsync(t, dir, nil, "run", job, "--json")
		if r.code != 0 || strings.Contains(r.stderr, "restored") || strings.Contains(r.stderr, "starting from the beginning") {
			t.Fatalf("the run after a kill between the two commits: exit %d\n%s", r.code, r.stderr)
		}
		assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	})
	t.Run("state-behind", func(t *testing.T) {
		api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 8})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
		st := filepath.Join(dir, "st.db")
		runCode(t, dir, nil, 0, "run", job, "--state", st, "--max-pages", "2")
		vacuumInto(t, st, filepath.Join(dir, "st-old.db"))
		runCode(t, dir, nil, 0, "run", job, "--state", st, "--max-pages", "6")
		restoreSQLite(t, filepath.Join(dir, "st-old.db"), st)
		r := idemsync(t, dir, nil, "run", job, "--state", st, "--json")
		if r.code != 0 || strings.Contains(r.stderr, "restored") {
			t.Fatalf("the run with the state behind the target: exit %d\n%s", r.code, r.stderr)
		}
		if got := parseRun(t, r); got.Status != "completed" || got.Inserted != 150 {
			t.Errorf("the unfinished run should continue from its old checkpoint (pages 3 to 12, 150 new rows): %+v", got)
		}
		assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	})
	t.Run("markers-dropped", func(t *testing.T) {
		api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 9})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", styleJob("hwm", url, "sqlite:out.db"))
		out := filepath.Join(dir, "out.db")
		runCode(t, dir, nil, 0, "run", job, "--max-pages", "4")
		db := openSQLite(t, out)
		if _, err := db.Exec(`DROP TABLE _idemsync_progress`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		r := idemsync(t, dir, nil, "run", job, "--json")
		if r.code != 0 || !strings.Contains(r.stderr, "adopting") || strings.Contains(r.stderr, "starting from the beginning") {
			t.Fatalf("the run over a target without markers: exit %d\n%s", r.code, r.stderr)
		}
		// The run continued (its counts are the whole run's): only the
		// overlap of its first page was read again, not the 100 rows.
		if got := parseRun(t, r); got.Inserted != 300 || got.Unchanged >= 100 {
			t.Errorf("the adopted target was read again from the beginning: %+v", got)
		}
		assertEqualSource(t, readSQLite(t, out), sourceRows(api))
		// Adopted, a restore is seen again.
		vacuumInto(t, out, filepath.Join(dir, "b.db"))
		api.Update(5, func(r *fakeapi.Record) { r.Name = "changed" })
		runCode(t, dir, nil, 0, "run", job)
		restoreSQLite(t, filepath.Join(dir, "b.db"), out)
		r = idemsync(t, dir, nil, "run", job, "--json")
		if r.code != 0 || !strings.Contains(r.stderr, "restored") {
			t.Fatalf("the run over the adopted target put back: exit %d\n%s", r.code, r.stderr)
		}
		assertEqualSource(t, readSQLite(t, out), sourceRows(api))
	})
}

// A state file put back from an older backup continues its unfinished
// run over a target ahead of it, whose pages it reads as unchanged: those
// rows are the target's, written by runs the old state does not know. A
// target then put back to a backup taken between the state's backup and
// those pages lacks them, and is behind what the state now trusts though
// ahead of the state's last page with rows: the next run must start from
// the beginning, not complete with exit 0 over the pages it skips
// (docs/guarantees.md, "Progress markers"; TestModelHostile seed 13066).
func TestStateRestoredThenTargetRestoredBetween(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 11})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	st, out := filepath.Join(dir, "st.db"), filepath.Join(dir, "out.db")
	runCode(t, dir, nil, 0, "run", job, "--state", st, "--max-pages", "2")
	vacuumInto(t, st, filepath.Join(dir, "st-old.db")) // run 1 at page 3
	runCode(t, dir, nil, 0, "run", job, "--state", st, "--max-pages", "1")
	vacuumInto(t, out, filepath.Join(dir, "out-old.db")) // pages 1 to 3
	runCode(t, dir, nil, 0, "run", job, "--state", st)
	restoreSQLite(t, filepath.Join(dir, "st-old.db"), st)
	// Pages 3 and 4, unchanged in the target: nothing written (the run's
	// counts hold its pages 1 and 2 too).
	if got := runCode(t, dir, nil, 0, "run", job, "--state", st, "--max-pages", "2"); got.Unchanged != 50 || got.Inserted != 50 {
		t.Fatalf("the old state's run should read pages 3 and 4 as unchanged: %+v", got)
	}
	restoreSQLite(t, filepath.Join(dir, "out-old.db"), out) // lacks page 4
	r := idemsync(t, dir, nil, "run", job, "--state", st, "--json")
	if r.code != 0 || parseRun(t, r).Status != "completed" {
		t.Fatalf("run over the restored target: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "restored") {
		t.Errorf("the run does not say why it started from the beginning:\n%s", r.stderr)
	}
	assertEqualSource(t, readSQLite(t, out), sourceRows(api))
}

// A target put back from a backup whose rows equal the source again (a
// change written and undone since) is behind the state: the next run
// starts over, and every page of it writes nothing. Those pages record
// the target's marker, not the state's; before, they recorded the
// state's, so each later run found the target behind again, abandoned
// the unfinished run and started over: with --max-pages it never
// completed (docs/guarantees.md, "Progress markers").
func TestRestoredTargetUnchangedRunContinues(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 12})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	st, out := filepath.Join(dir, "st.db"), filepath.Join(dir, "out.db")
	runCode(t, dir, nil, 0, "run", job, "--state", st)
	vacuumInto(t, out, filepath.Join(dir, "out-old.db"))
	rec, _ := api.Record(1)
	api.Update(1, func(r *fakeapi.Record) { r.Name = "changed" })
	runCode(t, dir, nil, 0, "run", job, "--state", st)
	api.Update(1, func(r *fakeapi.Record) { r.Name, r.UpdatedAt = rec.Name, rec.UpdatedAt })
	runCode(t, dir, nil, 0, "run", job, "--state", st)
	restoreSQLite(t, filepath.Join(dir, "out-old.db"), out)
	r := idemsync(t, dir, nil, "run", job, "--state", st, "--max-pages", "2", "--json")
	if r.code != 0 || parseRun(t, r).Status != "partial" || !strings.Contains(r.stderr, "restored") {
		t.Fatalf("first run over the restored target: exit %d, want 0 partial saying restored\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for i := 0; ; i++ {
		r = idemsync(t, dir, nil, "run", job, "--state", st, "--max-pages", "2", "--json")
		if r.code != 0 || strings.Contains(r.stderr, "restored") {
			t.Fatalf("run %d after the restore: exit %d, or it found the target restored again (each run starts over)\n%s\n%s", i+2, r.code, r.stdout, r.stderr)
		}
		if parseRun(t, r).Status == "completed" {
			break
		}
		if i == 6 { // 12 pages of 25, 2 a run
			t.Fatalf("no run completed in 8 runs of 2 pages over 12 pages: %s", r.stdout)
		}
	}
	assertEqualSource(t, readSQLite(t, out), sourceRows(api))
}

// A SQLite target that is the state file itself (by path, or by a hard
// link to it) is refused before anything is written, with exit 2 naming
// both, whichever of them was created first (docs/job-file.md, "target").
func TestTargetIsStateFile(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 30, Seed: 10})
	for _, c := range []struct {
		name, target string
		prepare      func(t *testing.T, dir string)
	}{
		{"same-path-new", "sqlite:st.db", nil},
		{"same-path-state-first", "sqlite:st.db", func(t *testing.T, dir string) {
			job := writeJob(t, dir, "other.yaml", styleJob("page", url, "sqlite:other.db"))
			runCode(t, dir, nil, 0, "run", job, "--state", "st.db")
		}},
		{"same-path-target-first", "sqlite:./st.db", func(t *testing.T, dir string) {
			job := writeJob(t, dir, "other.yaml", styleJob("page", url, "sqlite:st.db"))
			runCode(t, dir, nil, 0, "run", job, "--state", "other-state.db")
		}},
		{"hard-link", "sqlite:linked.db", func(t *testing.T, dir string) {
			job := writeJob(t, dir, "other.yaml", styleJob("page", url, "sqlite:other.db"))
			runCode(t, dir, nil, 0, "run", job, "--state", "st.db")
			if err := os.Link(filepath.Join(dir, "st.db"), filepath.Join(dir, "linked.db")); err != nil {
				t.Skip(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.prepare != nil {
				c.prepare(t, dir)
			}
			job := writeJob(t, dir, "job.yaml", strings.Replace(styleJob("page", url, c.target), "name: orders-page", "name: runs", 1))
			job = writeJob(t, dir, "job.yaml", strings.Replace(readFile(t, job), "table: orders", "table: runs", 1))
			r := idemsync(t, dir, nil, "run", job, "--state", "st.db", "--json")
			if r.code != 2 || !strings.Contains(r.stdout+r.stderr, "st.db") || !strings.Contains(r.stdout+r.stderr, "state file") {
				t.Fatalf("a target that is the state file: exit %d, want 2 naming both\n%s\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An unchanged re-sync writes nothing to the target, its progress marker
// included: a page that inserted, updated or deleted no row leaves the
// marker as it was, so a re-sync stays a read-only walk of the target (no
// WAL on PostgreSQL, no write transaction on SQLite), and a target put
// back to a backup taken before such pages lost nothing they wrote
// (docs/guarantees.md, "Progress markers").
func TestUnchangedResyncRaisesNoMarker(t *testing.T) {
	marker := func(t *testing.T, q func(string) int64) int64 {
		return q(`SELECT coalesce(max(marker), 0) FROM _idemsync_progress`)
	}
	t.Run("sqlite", func(t *testing.T) {
		_, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 7})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
		q := func(sql string) int64 {
			db := openSQLite(t, filepath.Join(dir, "out.db"))
			defer db.Close()
			var n int64
			if err := db.QueryRow(sql).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		runCode(t, dir, nil, 0, "run", job)
		first := marker(t, q)
		if first == 0 {
			t.Fatal("the first load raised no progress marker")
		}
		runCode(t, dir, nil, 0, "run", job)
		if again := marker(t, q); again != first {
			t.Errorf("an unchanged re-sync moved the progress marker from %d to %d: it wrote to the target", first, again)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		pg := postgresURL(t)
		_, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 8})
		schema := freshSchema(t, pg)
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", pgJob("page", url, pg, schema))
		q := func(sql string) int64 {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, pg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var n int64
			if err := conn.QueryRow(ctx, strings.Replace(sql, "_idemsync_progress", pgx.Identifier{schema, "_idemsync_progress"}.Sanitize(), 1)).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		runCode(t, dir, nil, 0, "run", job)
		first := marker(t, q)
		if first == 0 {
			t.Fatal("the first load raised no progress marker")
		}
		runCode(t, dir, nil, 0, "run", job)
		if again := marker(t, q); again != first {
			t.Errorf("an unchanged re-sync moved the progress marker from %d to %d: it wrote to the target", first, again)
		}
	})
}

// A target put back from a copy older than a copy of the state, a run
// (which finds the target behind and starts over, writing pages), then
// the state put back from its copy: the target's marker is ahead of that
// state's, yet the target lacks the pages the state's unfinished run
// committed after the target's copy. The run that noticed the restore
// moved the counter to a later era, so the next run finds the state of an
// earlier era and starts over too; before, it continued the state's run
// and completed with exit 0 over those pages (docs/guarantees.md,
// "Progress markers"; TestModelHostile seed 59).
func TestTargetRestoredThenNewerStatePutBack(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 14})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", url, "sqlite:out.db"))
	st, out := filepath.Join(dir, "st.db"), filepath.Join(dir, "out.db")
	runCode(t, dir, nil, 0, "run", job, "--state", st, "--max-pages", "1")
	vacuumInto(t, out, filepath.Join(dir, "out-old.db")) // page 1
	runCode(t, dir, nil, 0, "run", job, "--state", st, "--max-pages", "3")
	vacuumInto(t, st, filepath.Join(dir, "st-old.db")) // run 1 at page 5
	restoreSQLite(t, filepath.Join(dir, "out-old.db"), out)
	// Starts over: page 1 unchanged, page 2 written again; pages 3 and 4
	// stay missing.
	r := idemsync(t, dir, nil, "run", job, "--state", st, "--max-pages", "2", "--json")
	if r.code != 0 || !strings.Contains(r.stderr, "restored") {
		t.Fatalf("the run over the restored target: exit %d, want 0 saying restored\n%s", r.code, r.stderr)
	}
	restoreSQLite(t, filepath.Join(dir, "st-old.db"), st)
	r = idemsync(t, dir, nil, "run", job, "--state", st, "--json")
	if r.code != 0 || parseRun(t, r).Status != "completed" {
		t.Fatalf("the run with the state put back: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "restored") {
		t.Errorf("the run with the state put back does not say why it started from the beginning:\n%s", r.stderr)
	}
	assertEqualSource(t, readSQLite(t, out), sourceRows(api))
}
