package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// pgExec runs statements on the test server.
func pgExec(t *testing.T, pgURL string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// Rows a BEFORE INSERT trigger keeps out of the table are counted skipped,
// with a warning naming how many, never unchanged.
func TestPostgresTriggerDroppedRows(t *testing.T) {
	pg := postgresURL(t)
	api, url := startAPI(t, fakeapi.Options{Records: 200, Seed: 5})
	schema := freshSchema(t, pg)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", pgJob("page", url, pg, schema))
	table := pgx.Identifier{schema, "orders"}
	runCode(t, dir, nil, 0, "run", job, "--max-pages", "1")
	pgExec(t, pg, "TRUNCATE "+table.Sanitize(),
		`CREATE FUNCTION `+pgx.Identifier{schema, "drop_tens"}.Sanitize()+`() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.id % 10 = 0 THEN RETURN NULL; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER drop_tens BEFORE INSERT ON `+table.Sanitize()+` FOR EACH ROW EXECUTE FUNCTION `+
			pgx.Identifier{schema, "drop_tens"}.Sanitize()+`()`)
	r := idemsync(t, dir, nil, "run", job, "--restart", "--json")
	got := parseRun(t, r)
	if r.code != 0 || got.Inserted != 180 || got.Skipped != 20 || got.Unchanged != 0 {
		t.Fatalf("trigger dropping 20 of 200 rows: exit %d %+v, want 180 inserted, 20 skipped", r.code, got)
	}
	if !strings.Contains(r.stderr, "kept rows of the page out of the table") || !strings.Contains(r.stderr, "rows=") {
		t.Errorf("no warning naming the dropped rows:\n%s", r.stderr)
	}
	again := runCode(t, dir, nil, 0, "run", job)
	if again.Unchanged != 180 || again.Skipped != 20 {
		t.Errorf("second run: %+v, want 180 unchanged, 20 skipped", again)
	}
	if n := len(readPostgres(t, pg, table)); n != 180 || len(sourceRows(api)) != 200 {
		t.Errorf("table holds %d rows, want the 180 the trigger let through", n)
	}
}

// Several jobs' first runs at once, all creating the same missing table:
// every one completes, and the table equals the source.
func TestPostgresParallelFirstRuns(t *testing.T) {
	pg := postgresURL(t)
	api, url := startAPI(t, fakeapi.Options{Records: 100, Seed: 8})
	schema := freshSchema(t, pg)
	const n = 4
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		dir := t.TempDir()
		body := strings.Replace(pgJob("page", url, pg, schema), "name: orders-page", fmt.Sprintf("name: first-%d", i), 1)
		job := writeJob(t, dir, "job.yaml", body)
		go func() { results <- idemsync(t, dir, nil, "run", job, "--json") }()
	}
	for i := 0; i < n; i++ {
		r := <-results
		if r.code != 0 {
			t.Errorf("parallel first run: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	}
	assertEqualSource(t, readPostgres(t, pg, pgx.Identifier{schema, "orders"}), sourceRows(api))
}
