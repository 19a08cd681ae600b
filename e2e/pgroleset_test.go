package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgRoleSchema creates a login role of its own with the given settings
// (ALTER ROLE … SET, as an administrator configures a role in the wild)
// owning a schema of its own and another for a state (its name and
// "_st"), and returns the role's URL and the schema; all are dropped
// after the test.
func pgRoleSchema(t *testing.T, pg string, settings ...string) (string, string) {
	t.Helper()
	n := time.Now().UnixNano() % 1e12
	role, schema := fmt.Sprintf("pgenv_role_%d", n), fmt.Sprintf("pgenv_%d", n)
	stmts := []string{"CREATE ROLE " + role + " LOGIN PASSWORD 'pgenv'",
		"CREATE SCHEMA " + schema + " AUTHORIZATION " + role,
		"CREATE SCHEMA " + schema + "_st AUTHORIZATION " + role}
	for _, s := range settings {
		stmts = append(stmts, "ALTER ROLE "+role+" SET "+s)
	}
	pgExec(t, pg, stmts...)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), pg)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+", "+schema+"_st CASCADE")
			_, _ = c.Exec(context.Background(), "DROP OWNED BY "+role)
			_, _ = c.Exec(context.Background(), "DROP ROLE "+role)
			c.Close(context.Background())
		}
	})
	u := mustURL(t, pg)
	u.User = url.UserPassword(role, "pgenv")
	return u.String(), schema
}

// textAPI serves n records {id, v} whose v is text no single-byte
// encoding holds, ten per page with the total.
func textAPI(t *testing.T, n int) (*httptest.Server, map[int]string) {
	t.Helper()
	want := map[int]string{}
	for i := 1; i <= n; i++ {
		want[i] = fmt.Sprintf("héllo € ✓ 日本 %d", i)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		page = max(page, 1)
		data := []map[string]any{}
		for i := (page-1)*10 + 1; i <= min(page*10, n); i++ {
			data = append(data, map[string]any{"id": i, "v": want[i]})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "total": n})
	}))
	t.Cleanup(srv.Close)
	return srv, want
}

// textJob is the job file of textAPI's records into table of target.
func textJob(apiURL, target, table string) string {
	return fmt.Sprintf(`name: text
source:
  url: %s/items
  records: data
  timeout: 5s
pagination:
  style: page
  size_param: per_page
  size: 10
  total: total
retry:
  attempts: 2
  min_wait: 10ms
  max_wait: 50ms
target:
  url: %s
  table: %s
  key: [id]
  columns:
    id: {path: id, type: integer}
    v: v
  deletes: hard
`, apiURL, target, table)
}

// A target role whose client_encoding an administrator set to LATIN1
// (ALTER ROLE … SET client_encoding): idemsync sends UTF-8, so the
// server, reading it as LATIN1, stored every non-ASCII character as two
// or three others ("héllo" as "hÃ©llo") and the run exited 0; the next
// run found its rows unchanged. The table must hold the source's text,
// and a state whose role says the same must keep a ledger key as written:
// a host whose role said UTF8 acquired again a key ("k€") that a host
// whose role said LATIN1 had completed (docs/job-file.md, "PostgreSQL
// connections"; docs/operations.md, "State in PostgreSQL").
func TestPostgresRoleClientEncodingLatin1(t *testing.T) {
	pg := postgresURL(t)
	roleURL, schema := pgRoleSchema(t, pg, "client_encoding = 'LATIN1'")
	srv, want := textAPI(t, 25)
	dir := t.TempDir()
	job := writeJob(t, dir, "text.yaml", textJob(srv.URL, roleURL, schema+".items"))
	for run := 1; run <= 2; run++ {
		if r := idemsync(t, dir, nil, "run", job, "--quiet"); r.code != 0 {
			t.Fatalf("run %d: exit %d\nstderr: %s", run, r.code, r.stderr)
		}
		got := map[int]string{}
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pg)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(ctx, "SELECT id, v FROM "+schema+".items")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int
			var v string
			if err := rows.Scan(&id, &v); err != nil {
				t.Fatal(err)
			}
			got[id] = v
		}
		conn.Close(ctx)
		if len(got) != len(want) {
			t.Fatalf("run %d: %d rows, want %d", run, len(got), len(want))
		}
		for id, v := range want {
			if got[id] != v {
				t.Fatalf("run %d: row %d holds %q, the source %q", run, id, got[id], v)
			}
		}
	}

	// The ledger: a key completed through the LATIN1 role is completed
	// for a host whose role reads UTF-8.
	latin := pgStateURL(t, roleURL, schema+"_st", "30s")
	plain := pgStateURL(t, pg, schema+"_st", "30s")
	r := idemsync(t, dir, nil, "key", "claim", "k€", "--ns", "pgenv", "--state", latin)
	var claim struct{ Status, Token string }
	if err := json.Unmarshal([]byte(r.stdout), &claim); err != nil || claim.Status != "acquired" {
		t.Fatalf("claim through the LATIN1 role: exit %d, %q %v\nstderr: %s", r.code, r.stdout, err, r.stderr)
	}
	if r := idemsync(t, dir, nil, "key", "complete", "k€", "--ns", "pgenv", "--token", claim.Token,
		"--result", `{"v":"héllo €"}`, "--state", latin); r.code != 0 {
		t.Fatalf("complete: exit %d\nstderr: %s", r.code, r.stderr)
	}
	r = idemsync(t, dir, nil, "key", "claim", "k€", "--ns", "pgenv", "--state", plain)
	if !strings.Contains(r.stdout, `"status":"completed"`) || !strings.Contains(r.stdout, `"result":{"v":"héllo €"}`) {
		t.Fatalf("claim of the completed key k€ by another host: %s\nstderr: %s", r.stdout, r.stderr)
	}
}

// A state whose role an administrator gave another DateStyle (ALTER ROLE
// … SET DateStyle = 'SQL, DMY', as a European installation may): the
// state's timestamps came back as "28/11/2026 12:54:39 +14", which the
// driver cannot read, and every run failed with exit 1 ("can't scan into
// dest[1] (col: expires_at)"), the ledger too (docs/operations.md, "State
// in PostgreSQL").
func TestPostgresStateRoleDateStyle(t *testing.T) {
	pg := postgresURL(t)
	roleURL, schema := pgRoleSchema(t, pg, "DateStyle = 'SQL, DMY'", "TimeZone = 'Pacific/Kiritimati'",
		"IntervalStyle = 'sql_standard'")
	srv, _ := textAPI(t, 25)
	dir := t.TempDir()
	env := []string{"IDEMSYNC_STATE=" + pgStateURL(t, roleURL, schema+"_st", "30s")}
	job := writeJob(t, dir, "text.yaml", textJob(srv.URL, "sqlite:out.db", "items"))
	for run := 1; run <= 2; run++ {
		if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
			t.Fatalf("run %d: exit %d\nstderr: %s", run, r.code, r.stderr)
		}
	}
	if r := idemsync(t, dir, env, "status", job); r.code != 0 || !strings.Contains(r.stdout, "completed") {
		t.Fatalf("status: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := idemsync(t, dir, env, "key", "claim", "k1", "--ns", "pgenv"); r.code != 0 || !strings.Contains(r.stdout, `"acquired"`) {
		t.Fatalf("key claim: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// A state whose role has a statement_timeout (ALTER ROLE … SET
// statement_timeout) that ends a run's wait for the job's lease row,
// locked by another session's transaction: the database was busy, not
// broken, so the run exits 3 (try again), not 1, and the next run, once
// the row is free, completes (docs/operations.md, "Leases").
func TestPostgresStateRoleStatementTimeout(t *testing.T) {
	pg := postgresURL(t)
	roleURL, schema := pgRoleSchema(t, pg, "statement_timeout = '300ms'")
	srv, _ := textAPI(t, 25)
	dir := t.TempDir()
	env := []string{"IDEMSYNC_STATE=" + pgStateURL(t, roleURL, schema+"_st", "30s")}
	job := writeJob(t, dir, "text.yaml", textJob(srv.URL, "sqlite:out.db", "items"))
	if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("first run: exit %d\nstderr: %s", r.code, r.stderr)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+schema+"_st.leases WHERE job = 'text' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	r := idemsync(t, dir, env, "run", job)
	_ = tx.Rollback(ctx)
	if r.code != 3 || !strings.Contains(r.stderr, "statement timeout") {
		t.Fatalf("run ended by the role's statement_timeout: exit %d, want 3 naming it\nstderr: %s", r.code, r.stderr)
	}
	if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
		t.Fatalf("run after: exit %d\nstderr: %s", r.code, r.stderr)
	}
}

// startPgBouncer starts PgBouncer in transaction pooling mode in front of
// the test server, with extra lines added to its settings, and returns
// the URL of pg through it. It skips the test when PgBouncer is not
// installed (or, as root, when there is no postgres user to run it as).
func startPgBouncer(t *testing.T, pg string, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		t.Skip("pgbouncer is not installed")
	}
	u := mustURL(t, pg)
	pass, _ := u.User.Password()
	port := freePort(t)
	dir, err := os.MkdirTemp("", "pgenv-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cmd := []string{bin, filepath.Join(dir, "pgbouncer.ini")}
	if os.Getuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			t.Skip("pgbouncer does not run as root and there is no postgres user")
		}
		runuser, err := exec.LookPath("runuser")
		if err != nil {
			t.Skip("pgbouncer does not run as root and there is no runuser")
		}
		cmd = append([]string{runuser, "-u", "postgres", "--"}, cmd...)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ini := fmt.Sprintf(`[databases]
%s = host=%s port=%s dbname=%s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %s
unix_socket_dir =
auth_type = plain
auth_file = %s
pool_mode = transaction
default_pool_size = 4
%s
`, strings.TrimPrefix(u.Path, "/"), u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/"), port,
		filepath.Join(dir, "users.txt"), strings.Join(extra, "\n"))
	for name, body := range map[string]string{"pgbouncer.ini": ini, "users.txt": fmt.Sprintf("%q %q\n", u.User.Username(), pass)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := exec.Command(cmd[0], cmd[1:]...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	// Its own process group: runuser's child is killed with it.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL); _ = c.Wait() })
	addr := "127.0.0.1:" + port
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer did not listen on %s: %s", addr, out.String())
		}
	}
	u.Host = addr
	return u.String()
}

// A target URL that reaches PostgreSQL through PgBouncer: PgBouncer
// refuses the lock_timeout and statement_timeout idemsync sets when it
// connects, and every run exited 3 (try again later) for a setting no
// retry changes. It is exit 1 naming the pooler and what to do. A
// PgBouncer told to drop those parameters (ignore_startup_parameters) in
// transaction mode then gives one session's prepared statements to
// another: the run fails (never exits 0 with a table not written) naming
// the pooler too (docs/job-file.md, "PostgreSQL connections").
func TestPostgresTargetThroughPgBouncer(t *testing.T) {
	pg := postgresURL(t)
	schema := freshSchema(t, pg)
	srv, _ := textAPI(t, 25)
	dir := t.TempDir()

	refusing := startPgBouncer(t, pg)
	job := writeJob(t, dir, "text.yaml", textJob(srv.URL, refusing, schema+".items"))
	r := idemsync(t, dir, nil, "run", job)
	if r.code != 1 || !strings.Contains(r.stderr, "pooler") || !strings.Contains(r.stderr, "statement_timeout") {
		t.Fatalf("through PgBouncer refusing the timeouts: exit %d, want 1 naming the pooler\nstderr: %s", r.code, r.stderr)
	}

	ignoring := startPgBouncer(t, pg, "ignore_startup_parameters = lock_timeout,statement_timeout")
	job = writeJob(t, dir, "text.yaml", textJob(srv.URL, ignoring, schema+".items"))
	for run := 1; run <= 3; run++ {
		r := idemsync(t, dir, nil, "run", job)
		if r.code == 0 {
			continue
		}
		if r.code != 1 || !strings.Contains(r.stderr, "pooler") {
			t.Fatalf("run %d through PgBouncer in transaction mode: exit %d, want 1 naming the pooler\nstderr: %s", run, r.code, r.stderr)
		}
	}
}
