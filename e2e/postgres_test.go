package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
	"github.com/idemsync/idemsync/internal/pgtest"
)

// postgresURL returns the test server's URL, skipping the test when it is
// unset, unless IDEMSYNC_TEST_REQUIRE_POSTGRES=1 (CI) makes that a failure.
func postgresURL(t *testing.T) string {
	t.Helper()
	return pgtest.URL(t)
}

// freshSchema creates a schema of its own for the test and drops it after.
func freshSchema(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema := fmt.Sprintf("e2e_%s_%d", strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())), time.Now().UnixNano()%1e9)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), url)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			c.Close(context.Background())
		}
	})
	return schema
}

// readPostgres reads a table of the fake API's orders in the comparable
// form of readSQLite, failing on a duplicate key; empty when it is missing.
func readPostgres(t *testing.T, url string, table pgx.Identifier) map[int]row {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	out := map[int]row{}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table.Sanitize()).Scan(&exists); err != nil || !exists {
		return out
	}
	rows, err := conn.Query(ctx, `SELECT id, name, email, total::text, active, updated_at, tags::text FROM `+table.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int
		var r row
		var ts time.Time
		if err := rows.Scan(&id, &r.name, &r.email, &r.total, &r.active, &ts, &r.tags); err != nil {
			t.Fatal(err)
		}
		r.updated = ts.UTC().Format(time.RFC3339Nano)
		r.tags = strings.ReplaceAll(r.tags, ", ", ",") // jsonb prints ["a", "b"]
		if _, dup := out[id]; dup {
			t.Fatalf("duplicate key %d in %s", id, table.Sanitize())
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pgJob is styleJob writing to schema.orders on the test server.
func pgJob(style, apiURL, pgURL, schema string) string {
	return strings.Replace(styleJob(style, apiURL, pgURL), "  table: orders", "  table: "+schema+".orders", 1)
}

// End to end on PostgreSQL: a clean run equals the source, a second run
// changes nothing, and at least 15 SIGKILLs at random moments followed by
// runs to exit 0 still leave the table exactly equal to the source.
func TestPostgresEndToEnd(t *testing.T) {
	pg := postgresURL(t)
	t.Run("clean", func(t *testing.T) {
		api, url := startAPI(t, fakeapi.Options{Records: 500, Seed: 3})
		schema := freshSchema(t, pg)
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", pgJob("page", url, pg, schema))
		first := parseRun(t, idemsync(t, dir, nil, "run", job, "--json"))
		if first.Status != "completed" || first.Inserted != 500 {
			t.Fatalf("first run: %+v", first)
		}
		assertEqualSource(t, readPostgres(t, pg, pgx.Identifier{schema, "orders"}), sourceRows(api))
		second := parseRun(t, idemsync(t, dir, nil, "run", job, "--json"))
		if second.Inserted != 0 || second.Updated != 0 || second.Unchanged != 500 {
			t.Errorf("second run should change nothing: %+v", second)
		}
		api.Update(42, func(r *fakeapi.Record) { r.Customer.Email = "new@example.com" })
		third := parseRun(t, idemsync(t, dir, nil, "run", job, "--json"))
		if third.Updated != 1 || third.Inserted != 0 {
			t.Errorf("one change: %+v", third)
		}
		assertEqualSource(t, readPostgres(t, pg, pgx.Identifier{schema, "orders"}), sourceRows(api))
	})
	for i, style := range []string{"page", "cursor", "hwm"} {
		t.Run("crash-"+style, func(t *testing.T) {
			const records, kills = 4000, 15
			api, url := startAPI(t, fakeapi.Options{Records: records, Latency: 3 * time.Millisecond, Seed: int64(10 + i)})
			schema := freshSchema(t, pg)
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", pgJob(style, url, pg, schema))
			seed := uint64(time.Now().UnixNano())
			st := crashLoop(t, dir, job, kills, seed, 20*time.Millisecond, 120*time.Millisecond)
			assertEqualSource(t, readPostgres(t, pg, pgx.Identifier{schema, "orders"}), sourceRows(api))
			t.Logf("postgres %s (seed %d): %d kills, %d completed before their kill, %d final run(s), %d requests",
				style, seed, st.kills, st.completions, st.finalRuns, api.TotalRequests())
		})
	}
	// The password of the target URL never shows, even when it fails.
	t.Run("wrong-password", func(t *testing.T) {
		_, url := startAPI(t, fakeapi.Options{Records: 10})
		bad := strings.Replace(pg, "postgres://postgres:", "postgres://postgres:WrongPassw0rdCanary", 1)
		if bad == pg {
			t.Skip("the test server URL has no password to get wrong")
		}
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", pgJob("page", url, bad, "public"))
		r := idemsync(t, dir, nil, "run", job, "--json")
		if r.code != 1 || !strings.Contains(r.stdout, "authentication failed") {
			t.Errorf("wrong password: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		for _, out := range []string{r.stdout, r.stderr} {
			if strings.Contains(out, "WrongPassw0rdCanary") {
				t.Errorf("password printed: %s", out)
			}
		}
		st := idemsync(t, dir, nil, "status", job, "--json")
		if strings.Contains(st.stdout+st.stderr, "WrongPassw0rdCanary") || !strings.Contains(st.stdout, "never_run") {
			t.Errorf("status after a failed connect: %s %s", st.stdout, st.stderr)
		}
	})
}
