package e2e

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx", for stateDB
)

// With IDEMSYNC_TEST_STATE=postgres (and IDEMSYNC_TEST_POSTGRES_URL), the
// binaries the tests start through testEnv keep their state in PostgreSQL:
// one schema per state file they would have used, a lease of testLease, and
// $IDEMSYNC_IF_RUNNING set to wait, so that a run started right after a
// SIGKILL waits for the killed holder's lease instead of skipping. The
// crash, chaos, model, replay, fan-out and deletion tests run so in
// .ci/run; a test that reads the state file itself reads the schema
// instead (stateDB), and one that is about the state file skips
// (skipWithPostgresState).
//
// testLease is 3s: with a lease of 1s, a holder renews with 470ms to spare
// and, on the 2-core CI machine under load, missed that and stopped
// writing (exit 4, "job lease could not be renewed before it could
// expire") in a third of the crash matrix's points; the price is up to 3s
// of waiting after each kill.
const testLease = 3 * time.Second

// outliveKilledLease waits, when the state is in PostgreSQL, until the
// lease of a holder just killed has expired: until then status shows the
// job running (the lease's holder), where a state file's lock died with
// the process.
func outliveKilledLease() {
	if pgState() {
		time.Sleep(testLease)
	}
}

var (
	stateSchemasMu gosync.Mutex
	stateSchemas   = map[string]bool{}
)

// testEnv is cleanEnv for a binary started in dir with args, with the
// state the test variable asks for: in PostgreSQL, one schema per state
// file the run would have used (stateSchema).
func testEnv(dir string, args ...string) []string {
	env := cleanEnv()
	pg := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL")
	if os.Getenv("IDEMSYNC_TEST_STATE") != "postgres" || pg == "" {
		return env
	}
	schema := stateSchema(stateKey(dir, args))
	stateSchemasMu.Lock()
	stateSchemas[schema] = true
	stateSchemasMu.Unlock()
	u, err := url.Parse(pg)
	if err != nil {
		return env
	}
	q := u.Query()
	q.Set("schema", schema)
	q.Set("lease", testLease.String())
	u.RawQuery = q.Encode()
	return append(env, "IDEMSYNC_STATE="+u.String(), "IDEMSYNC_IF_RUNNING=wait=60s")
}

// stateSchema is the schema of the state testEnv gives the binaries
// whose state file would be key (stateKey).
func stateSchema(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "e2e_state_" + hex.EncodeToString(sum[:8])
}

// stateLine is a job file's own state file (state: NAME).
var stateLine = regexp.MustCompile(`(?m)^state:[ \t]*["']?([^"'\s#]+)`)

// stateKey tells apart the state files of runs in dir: a job file among
// args that names its own (state: NAME) keeps it in NAME beside it, as
// tests with one job file per target in one folder do; any other run's
// state is dir's.
func stateKey(dir string, args []string) string {
	for _, a := range args {
		if !strings.HasSuffix(a, ".yaml") && !strings.HasSuffix(a, ".yml") {
			continue
		}
		if !filepath.IsAbs(a) {
			a = filepath.Join(dir, a)
		}
		b, err := os.ReadFile(a)
		if err != nil {
			continue
		}
		if m := stateLine.FindSubmatch(b); m != nil {
			return filepath.Join(filepath.Dir(a), string(m[1]))
		}
	}
	return dir
}

// stateDB opens, to read, the state of the binaries run in dir: the
// file .idemsync/state.db, or with IDEMSYNC_TEST_STATE=postgres its
// schema, as the search path. It returns nil when the file is not there.
func stateDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	driver, dsn := "sqlite", filepath.Join(dir, ".idemsync", "state.db")
	if pgState() {
		u, err := url.Parse(os.Getenv("IDEMSYNC_TEST_POSTGRES_URL"))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", stateSchema(dir))
		u.RawQuery = q.Encode()
		driver, dsn = "pgx", u.String()
	} else if _, err := os.Stat(dsn); err != nil {
		return nil
	} else {
		dsn += "?mode=ro"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// noStateYet reports whether err is a query's finding that the state has
// no tables yet (a process killed while creating it).
func noStateYet(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "does not exist"))
}

// pgState reports whether testEnv puts the state in PostgreSQL.
func pgState() bool {
	return os.Getenv("IDEMSYNC_TEST_STATE") == "postgres" && os.Getenv("IDEMSYNC_TEST_POSTGRES_URL") != ""
}

// stateJoinsTarget reports whether a run's state in PostgreSQL shares the
// database of target: each page's rows and checkpoint then commit in one
// transaction (docs/guarantees.md, "One transaction per page").
func stateJoinsTarget(target string) bool {
	return pgState() && target == os.Getenv("IDEMSYNC_TEST_POSTGRES_URL")
}

// skipWithPostgresState skips a test about the state file itself when
// testEnv puts the state in PostgreSQL.
func skipWithPostgresState(t *testing.T, why string) {
	t.Helper()
	if pgState() {
		t.Skip("IDEMSYNC_TEST_STATE=postgres: " + why)
	}
}

// skipOwnPostgresState skips, when testEnv puts the state in PostgreSQL, a
// test (or subtest) that gives every binary it starts a state in
// PostgreSQL of its own (IDEMSYNC_STATE, which wins over testEnv's): it
// already ran exactly so in the pass on state files, and would only run
// the same again.
func skipOwnPostgresState(t *testing.T) {
	t.Helper()
	if pgState() {
		t.Skip("IDEMSYNC_TEST_STATE=postgres: this test keeps its state in PostgreSQL of its own and ran so without the variable")
	}
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
