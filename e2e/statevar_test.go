package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"os"
	gosync "sync"

	"github.com/jackc/pgx/v5"
)

// With IDEMSYNC_TEST_STATE=postgres (and IDEMSYNC_TEST_POSTGRES_URL), the
// binaries the tests start through testEnv keep their state in PostgreSQL:
// one schema per working folder, a lease of 1s, and $IDEMSYNC_IF_RUNNING
// set to wait, so that a run started right after a SIGKILL waits for the
// killed holder's lease instead of skipping. Tests that open the state
// file itself, or that count on a second run skipping or exiting 4 at
// once, do not run so (.ci/run runs a subset).
var (
	stateSchemasMu gosync.Mutex
	stateSchemas   = map[string]bool{}
)

// testEnv is cleanEnv for a binary started in dir, with the state the
// test variable asks for.
func testEnv(dir string) []string {
	env := cleanEnv()
	pg := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL")
	if os.Getenv("IDEMSYNC_TEST_STATE") != "postgres" || pg == "" {
		return env
	}
	sum := sha256.Sum256([]byte(dir))
	schema := "e2e_state_" + hex.EncodeToString(sum[:8])
	stateSchemasMu.Lock()
	stateSchemas[schema] = true
	stateSchemasMu.Unlock()
	u, err := url.Parse(pg)
	if err != nil {
		return env
	}
	q := u.Query()
	q.Set("schema", schema)
	q.Set("lease", "1s")
	u.RawQuery = q.Encode()
	return append(env, "IDEMSYNC_STATE="+u.String(), "IDEMSYNC_IF_RUNNING=wait=60s")
}

// dropTestStates drops the schemas testEnv handed out.
func dropTestStates() {
	pg := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL")
	if pg == "" || len(stateSchemas) == 0 {
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	for s := range stateSchemas {
		_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s}.Sanitize()+" CASCADE")
	}
}
