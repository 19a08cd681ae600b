package e2e

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// pgstate2Schema creates a schema of its own (prefixed pgstate2_) for the
// test and drops it after.
func pgstate2Schema(t *testing.T, pg string) string {
	t.Helper()
	schema := fmt.Sprintf("pgstate2_%d", time.Now().UnixNano()%1e12)
	pgExec(t, pg, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), pg)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			c.Close(context.Background())
		}
	})
	return schema
}

// fencedTargetURL is pg named by localhost instead of 127.0.0.1: another
// database to idemsync than a state named by pg, so the target is fenced
// (docs/guarantees.md, "Fenced targets").
func fencedTargetURL(t *testing.T, pg string) string {
	t.Helper()
	u := mustURL(t, pg)
	_, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = net.JoinHostPort("localhost", port)
	return u.String()
}

// An operator deletes the lease row of a job whose first holder (the
// job's first token) is still running, with a page in flight; a second
// host then takes the job and completes it with the source's newer
// values. The re-created row must not give the second host the token the
// first one holds: the first one's stale page is refused by the fenced
// target, it exits 4, and the table equals the source
// (docs/operations.md, "Leases").
func TestPostgresStateLeaseRowDeletedTwoHolders(t *testing.T) {
	pg := postgresURL(t)
	schema := pgstate2Schema(t, pg)
	state := pgStateURL(t, pg, schema, "30s") // no heartbeat during the test
	env := []string{"IDEMSYNC_STATE=" + state}
	api := fakeapi.New(fakeapi.Options{Records: 300, Latency: 2 * time.Millisecond})
	g := &staleGate{gate{h: api, n: "5", arrived: make(chan struct{}), open: make(chan struct{})}}
	apiURL := serve(t, g)
	dir := t.TempDir()
	target := fencedTargetURL(t, pg)
	job := writeJob(t, dir, "job.yaml", pgJob("page", apiURL, target, schema))
	table := pgx.Identifier{schema, "orders"}

	_, errOut, done := startIdemsync(t, dir, env, "run", job, "--quiet")
	g.reached(t, errOut, done)
	time.Sleep(300 * time.Millisecond) // the page before commits
	pgExec(t, pg, "DELETE FROM "+pgx.Identifier{schema, "leases"}.Sanitize())
	for id := 101; id <= 125; id++ { // page 5, as the first holder fetched it, is stale now
		api.Update(id, func(r *fakeapi.Record) { r.Name = "renamed after the row was deleted" })
	}
	if r := idemsync(t, dir, env, "run", job, "--quiet", "--if-running", "fail"); r.code != 0 {
		t.Fatalf("second run after the lease row was deleted: exit %d: %s", r.code, r.stderr)
	}
	assertEqualSource(t, readPostgres(t, target, table), sourceRows(api))
	close(g.open)
	if code := exitCode(<-done); code != 4 {
		t.Errorf("the first run, whose lease row was deleted and re-created by another: exit %d, want 4: %s", code, errOut)
	}
	assertEqualSource(t, readPostgres(t, target, table), sourceRows(api))
}

// After two runs of a job to a fenced target (its fences row holds the
// second run's token), an operator deletes the job's lease row: the next
// run takes a token above both, so the target accepts its pages, it exits
// 0 and the table equals the source (docs/operations.md, "Leases").
func TestPostgresStateLeaseRowDeletedFencedTargetAccepts(t *testing.T) {
	pg := postgresURL(t)
	schema := pgstate2Schema(t, pg)
	state := pgStateURL(t, pg, schema, "30s")
	env := []string{"IDEMSYNC_STATE=" + state}
	api, apiURL := startAPI(t, fakeapi.Options{Records: 100})
	dir := t.TempDir()
	target := fencedTargetURL(t, pg)
	job := writeJob(t, dir, "job.yaml", pgJob("page", apiURL, target, schema))
	for i := 0; i < 2; i++ {
		if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
			t.Fatalf("run %d: exit %d: %s", i+1, r.code, r.stderr)
		}
	}
	var fenced int
	conn, err := pgx.Connect(context.Background(), pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{schema, "_idemsync_fences"}.Sanitize()).Scan(&fenced); err != nil || fenced != 1 {
		t.Fatalf("the target is not fenced (%d rows, %v): the test would prove nothing", fenced, err)
	}
	pgExec(t, pg, "DELETE FROM "+pgx.Identifier{schema, "leases"}.Sanitize())
	api.Update(7, func(r *fakeapi.Record) { r.Name = "renamed after the row was deleted" })
	if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("run after the lease row was deleted: exit %d, want 0: %s", r.code, r.stderr)
	}
	assertEqualSource(t, readPostgres(t, target, pgx.Identifier{schema, "orders"}), sourceRows(api))
}

// A role whose lock_timeout (ALTER ROLE … SET) is shorter than the holder's
// page transaction, which keeps the lease row locked while it writes: a
// second host meeting that lock is told the job is locked, as when it waits
// for the transaction (docs/operations.md, "Leases"), so --if-running skip
// skips with exit 0 and wait waits and then runs; neither fails with exit 3
// as if the database were unreachable.
func TestPostgresStateRoleLockTimeout(t *testing.T) {
	pg := postgresURL(t)
	schema := pgstate2Schema(t, pg)
	role := "pgstate2_role_" + schema[len("pgstate2_"):]
	pgExec(t, pg, "CREATE ROLE "+role+" LOGIN PASSWORD 'pgstate2'",
		"ALTER ROLE "+role+" SET lock_timeout = '100ms'",
		"ALTER SCHEMA "+schema+" OWNER TO "+role,
		"GRANT CREATE ON DATABASE "+pgx.Identifier{strings.TrimPrefix(mustURL(t, pg).Path, "/")}.Sanitize()+" TO "+role)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), pg)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			_, _ = c.Exec(context.Background(), "DROP OWNED BY "+role)
			_, _ = c.Exec(context.Background(), "DROP ROLE "+role)
			c.Close(context.Background())
		}
	})
	u := mustURL(t, pg)
	u.User = url.UserPassword(role, "pgstate2")
	state := pgStateURL(t, u.String(), schema, "30s")
	env := []string{"IDEMSYNC_STATE=" + state}
	_, apiURL := startAPI(t, fakeapi.Options{Records: 50})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", apiURL, "sqlite:out.db"))
	if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	// A page transaction in flight: the lease row locked for a while.
	hold := func(d time.Duration) chan struct{} {
		ctx := context.Background()
		c, err := pgx.Connect(ctx, pg)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT 1 FROM "+pgx.Identifier{schema, "leases"}.Sanitize()+" FOR UPDATE"); err != nil {
			t.Fatal(err)
		}
		ended := make(chan struct{})
		go func() {
			time.Sleep(d)
			_ = tx.Commit(ctx)
			c.Close(ctx)
			close(ended)
		}()
		return ended
	}
	ended := hold(time.Second)
	if r := idemsync(t, dir, env, "run", job, "--if-running", "skip"); r.code != 0 || !strings.Contains(r.stdout, ": skipped: ") {
		t.Errorf("--if-running skip meeting the holder's page transaction: exit %d, want 0 skipped: %s %s", r.code, r.stdout, r.stderr)
	}
	<-ended
	ended = hold(time.Second)
	if r := idemsync(t, dir, env, "run", job, "--if-running", "wait=20s"); r.code != 0 || strings.Contains(r.stdout, ": skipped: ") {
		t.Errorf("--if-running wait meeting the holder's page transaction: exit %d, want 0 after the wait: %s %s", r.code, r.stdout, r.stderr)
	}
	<-ended
}

// A state schema made beforehand by an administrator and owned by a role
// that may not create schemas in the database (the least privilege a
// state needs): the first run opens it, creates the state's tables in it
// and completes (docs/operations.md, "State in PostgreSQL").
func TestPostgresStateSchemaOwnedByRole(t *testing.T) {
	pg := postgresURL(t)
	schema := pgstate2Schema(t, pg)
	role := "pgstate2_owner_" + schema[len("pgstate2_"):]
	pgExec(t, pg, "CREATE ROLE "+role+" LOGIN PASSWORD 'pgstate2'",
		"ALTER SCHEMA "+schema+" OWNER TO "+role)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), pg)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			_, _ = c.Exec(context.Background(), "DROP OWNED BY "+role)
			_, _ = c.Exec(context.Background(), "DROP ROLE "+role)
			c.Close(context.Background())
		}
	})
	u := mustURL(t, pg)
	u.User = url.UserPassword(role, "pgstate2")
	env := []string{"IDEMSYNC_STATE=" + pgStateURL(t, u.String(), schema, "30s")}
	api, apiURL := startAPI(t, fakeapi.Options{Records: 50})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", styleJob("page", apiURL, "sqlite:out.db"))
	if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("run on a schema its role owns: exit %d: %s", r.code, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}
