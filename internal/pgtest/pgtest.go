// Package pgtest gives tests the PostgreSQL server they run against:
// IDEMSYNC_TEST_POSTGRES_URL (source .ci/postgres to start one). Without
// it the test is skipped, unless IDEMSYNC_TEST_REQUIRE_POSTGRES is set
// (CI sets it), which fails the test: there the PostgreSQL tests must run.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URL returns the test server's URL, or skips (fails, when required) t.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL")
	if url == "" {
		if os.Getenv("IDEMSYNC_TEST_REQUIRE_POSTGRES") != "" {
			t.Fatal("IDEMSYNC_TEST_POSTGRES_URL is not set but IDEMSYNC_TEST_REQUIRE_POSTGRES is: the PostgreSQL tests must run")
		}
		t.Skip("IDEMSYNC_TEST_POSTGRES_URL is not set; skipping PostgreSQL (source .ci/postgres to start a server)")
	}
	return url
}

// Schema connects to the test server and creates a schema of its own,
// named prefix and a random suffix, dropped with the connection closed
// when t ends.
func Schema(t testing.TB, prefix string) (*pgx.Conn, string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, URL(t))
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := prefix + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	return conn, schema
}
