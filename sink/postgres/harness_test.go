package postgres_test

import (
	"context"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/pgtest"
	"github.com/idemsync/idemsync/sink/postgres"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// TestConformance runs the suite every database passes.
func TestConformance(t *testing.T) {
	sinktest.Run(t, newPostgresBackend)
}

// pgEnv names the environment variable holding the test server's URL;
// pgRequireEnv, when set (CI), turns a missing URL into a failure.
const (
	pgEnv        = "IDEMSYNC_TEST_POSTGRES_URL"
	pgRequireEnv = "IDEMSYNC_TEST_REQUIRE_POSTGRES"
)

// postgresURL returns the test server's URL, skipping the test with a
// one-line message when it is unset (failing it instead under CI).
func postgresURL(t testing.TB) string {
	t.Helper()
	return pgtest.URL(t)
}

// newPostgresBackend returns a fresh schema on the test server as a
// sinktest.DB, dropped on cleanup; it skips t when no server is set.
func newPostgresBackend(t *testing.T) *sinktest.DB {
	t.Helper()
	url := postgresURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to %s: %v", pgEnv, err)
	}
	schema := "idemsync_test_" + sinktest.RandomHex(6)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+sqlkit.QuoteIdent(schema)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+sqlkit.QuoteIdent(schema)+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		conn.Close(ctx)
	})
	b := &sinktest.DB{Name: "postgres", Schema: schema, Schemas: true, UniqueFix: "ADD UNIQUE",
		AsText: func(expr string) string { return expr + "::text" },
		Skip:   map[string]string{"integer primary key with a numeric mapping": "PostgreSQL refuses 1.0 as input for an integer column"}}
	b.Open = func(ctx context.Context) (contract.Sink, error) {
		return postgres.OpenTarget(ctx, contract.Conn{URL: url}, nil)
	}
	b.Exec = func(t *testing.T, query string) {
		t.Helper()
		if _, err := conn.Exec(ctx, query); err != nil {
			t.Fatalf("exec %s: %v", query, err)
		}
	}
	b.Rows = func(t *testing.T, query string) [][]any {
		t.Helper()
		rows, err := conn.Query(ctx, query)
		if err != nil {
			t.Fatalf("query %s: %v", query, err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		if err != nil {
			t.Fatalf("query %s: %v", query, err)
		}
		return out
	}
	b.DropOdd = func(t *testing.T, tbl *contract.Table) {
		fn := sqlkit.QuoteIdent(schema) + ".drop_odd"
		b.Exec(t, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.id % 2 = 1 THEN RETURN NULL; END IF; RETURN NEW; END $$`)
		b.Exec(t, `CREATE TRIGGER drop_odd BEFORE INSERT ON `+sinktest.QName(tbl)+` FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	}
	return b
}
