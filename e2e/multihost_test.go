package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
	"github.com/jackc/pgx/v5"
)

// The multi-host model (docs/operations.md, "Leases"): 3 hosts, each its
// own working folder and its own TCP proxy to one PostgreSQL holding the
// state and the target, run one job file while the test SIGKILLs them,
// pauses them past their lease (SIGSTOP, SIGCONT), and drops, stalls and
// resets their connections (also right after a COMMIT). Every connection
// of a host goes through its proxy: the state's and the target's, which
// idemsync sees as another database (mode "fenced": the target fences
// each page) or as the state's own (mode "joined": one transaction per
// page). The database's own
// history (triggers on the leases and pages) is checked after every exit:
// a run that exits 0 completed leaves the table equal to the source; no
// page commits under a token another acquisition superseded; no lease is
// taken while the previous holder's lease runs; and a last clean run
// completes with the table equal to the source (no state lost).
// IDEMSYNC_TEST_MULTIHOST_SEEDS=N runs N seeds (default 1);
// IDEMSYNC_TEST_MULTIHOST_SEED=S replays one.
func TestMultiHostModel(t *testing.T) {
	pg := postgresURL(t)
	seeds := []uint64{uint64(time.Now().UnixNano())}
	if s := os.Getenv("IDEMSYNC_TEST_MULTIHOST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = []uint64{v}
	} else if n, _ := strconv.Atoi(os.Getenv("IDEMSYNC_TEST_MULTIHOST_SEEDS")); n > 1 {
		for i := 1; i < n; i++ {
			seeds = append(seeds, seeds[0]+uint64(i))
		}
	}
	resets := 0
	for _, mode := range []string{"fenced", "joined"} {
		for _, seed := range seeds {
			t.Run(mode+"/"+strconv.FormatUint(seed, 10), func(t *testing.T) {
				defer func() {
					if t.Failed() {
						t.Logf("reproduce: IDEMSYNC_TEST_POSTGRES_URL=… IDEMSYNC_TEST_MULTIHOST_SEED=%d go test ./e2e -run 'TestMultiHostModel/%s' -count=1", seed, mode)
					}
				}()
				resets += multiHost(t, pg, mode == "joined", seed)
			})
		}
	}
	// The lost answer of a page's commit is the fault the proxies exist
	// for: a run without one proved nothing of it.
	if resets == 0 && !t.Failed() {
		t.Errorf("no connection was reset right after a page committed (seeds %v)", seeds)
	}
}

// mhHost is one host: its folder, its proxy, its run in progress.
type mhHost struct {
	dir   string
	proxy *pgProxy
	env   []string
	cmd   *exec.Cmd
	out   *bytes.Buffer
	errs  *bytes.Buffer
	done  chan error
}

// multiHost runs one seed in one mode and returns how many connections
// its proxies reset right after a page committed.
func multiHost(t *testing.T, pg string, joined bool, seed uint64) int {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e37))
	const lease = time.Second
	ctx := context.Background()
	schema, hist := freshSchema(t, pg), freshSchema(t, pg)
	api := fakeapi.New(fakeapi.Options{Records: 300, Latency: 15 * time.Millisecond, Seed: int64(seed % 1000)})
	apiURL := serve(t, api)
	u := mustURL(t, pg)
	viaProxy := func(p *pgProxy) string {
		v := *u
		v.Host = p.addr()
		return v.String()
	}
	stateVia := func(base string) string { return pgStateURL(t, base, schema, lease.String()) }

	// The state's schema, and the history the test reads.
	if r := idemsync(t, t.TempDir(), nil, "status", "--state", stateVia(pg)); r.code != 0 {
		t.Fatalf("create the state: %s", r.stderr)
	}
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	S, H := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{hist}.Sanitize()
	for _, q := range []string{
		`CREATE TABLE ` + H + `.leases (id bigserial PRIMARY KEY, job text, token bigint, holder text, acquired_at timestamptz, expires_at timestamptz, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
		`CREATE TABLE ` + H + `.pages (run_id bigint, seq bigint, token bigint, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
		`CREATE FUNCTION ` + H + `.log_lease() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			INSERT INTO ` + H + `.leases (job, token, holder, acquired_at, expires_at) VALUES (NEW.job, NEW.token, NEW.holder, NEW.acquired_at, NEW.expires_at);
			RETURN NEW; END $$`,
		`CREATE TRIGGER log_lease AFTER INSERT OR UPDATE ON ` + S + `.leases FOR EACH ROW EXECUTE FUNCTION ` + H + `.log_lease()`,
		`CREATE FUNCTION ` + H + `.log_page() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			INSERT INTO ` + H + `.pages (run_id, seq, token) SELECT NEW.run_id, NEW.seq, l.token
				FROM ` + S + `.runs r JOIN ` + S + `.leases l ON l.job = r.job WHERE r.id = NEW.run_id;
			RETURN NEW; END $$`,
		`CREATE TRIGGER log_page AFTER INSERT ON ` + S + `.pages FOR EACH ROW EXECUTE FUNCTION ` + H + `.log_page()`,
		// The fenced target's page commits, in their commit order (the
		// fence row's lock orders them): the table as idemsync creates it
		// (sink/postgres/fence.go), created first to carry the trigger.
		`CREATE TABLE ` + H + `.fences (id bigserial PRIMARY KEY, key text, token bigint, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
		`CREATE FUNCTION ` + H + `.log_fence() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			INSERT INTO ` + H + `.fences (key, token) VALUES (NEW.key, NEW.token);
			RETURN NEW; END $$`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if !joined {
		for _, q := range []string{
			`CREATE TABLE ` + S + `._idemsync_fences (key text PRIMARY KEY, token bigint NOT NULL, at timestamptz NOT NULL DEFAULT now())`,
			`CREATE TRIGGER log_fence AFTER INSERT OR UPDATE ON ` + S + `._idemsync_fences FOR EACH ROW EXECUTE FUNCTION ` + H + `.log_fence()`,
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}

	// The target is named by one URL on every host, without a port (the
	// walk's identity holds the URL: a host reaching it by another one
	// would not continue another host's run); PGPORT sends each host's
	// connections to its proxy. Fenced, the target names the proxy as
	// localhost and the state as 127.0.0.1: another database to idemsync
	// (docs/guarantees.md, "Fenced targets").
	target := *u
	target.Host = "127.0.0.1"
	if !joined {
		target.Host = "localhost"
	}
	jobBody := pgJob("cursor", apiURL, target.String(), schema)
	hosts := make([]*mhHost, 3)
	for i := range hosts {
		h := &mhHost{dir: t.TempDir(), proxy: startProxy(t, u.Host)}
		_, port, err := net.SplitHostPort(h.proxy.addr())
		if err != nil {
			t.Fatal(err)
		}
		h.env = []string{"IDEMSYNC_STATE=" + stateVia(viaProxy(h.proxy)), "PGPORT=" + port}
		writeJob(t, h.dir, "job.yaml", jobBody)
		hosts[i] = h
	}
	want := sourceRows(api)
	table := pgx.Identifier{schema, "orders"}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: "+format, append([]any{seed}, args...)...)
	}

	// exited checks one finished run.
	completed, exits := 0, map[int]int{}
	exited := func(i int, h *mhHost, err error) {
		code := exitCode(err)
		if ws, ok := h.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = -1
		}
		exits[code]++
		var res struct{ Status string }
		_ = json.Unmarshal(h.out.Bytes(), &res)
		switch {
		case code == 0 && res.Status == "completed":
			completed++
			assertEqualSource(t, readPostgres(t, pg, table), want)
			if t.Failed() {
				fail("host %d exited 0 completed but the table differs from the source", i)
			}
		case code == 0, code == 3, code == 4, code == -1:
		default:
			fail("host %d exited %d: %s %s", i, code, h.out, h.errs)
		}
		checkHistory(t, conn, H, seed)
		h.cmd = nil
	}
	start := func(h *mhHost) {
		c := exec.Command(binary, "run", "job.yaml", "--json", "--log-level", "warn")
		c.Dir = h.dir
		c.Env = append(cleanEnv(), h.env...)
		h.out, h.errs = &bytes.Buffer{}, &bytes.Buffer{}
		c.Stdout, c.Stderr = h.out, h.errs
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		h.cmd, h.done = c, make(chan error, 1)
		go func() { h.done <- c.Wait() }()
		t.Cleanup(func() { _ = c.Process.Signal(syscall.SIGCONT); _ = c.Process.Kill() })
	}
	reap := func() {
		for i, h := range hosts {
			if h.cmd == nil {
				continue
			}
			select {
			case err := <-h.done:
				exited(i, h, err)
			default:
			}
		}
	}

	for step := 0; step < 40; step++ {
		reap()
		h := hosts[rng.IntN(len(hosts))]
		if h.cmd == nil {
			if rng.IntN(3) == 0 {
				h.proxy.armCommitReset() // the run's first page (or a later run's) loses its answer
			}
			start(h)
			time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
			continue
		}
		switch a := rng.IntN(100); {
		case a < 15:
			_ = h.cmd.Process.Kill()
		case a < 30:
			_ = h.cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(lease*3/2 + time.Duration(rng.IntN(300))*time.Millisecond)
			_ = h.cmd.Process.Signal(syscall.SIGCONT)
		case a < 45:
			h.proxy.drop()
		case a < 55:
			h.proxy.stall(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		case a < 70:
			h.proxy.armCommitReset()
		default:
			time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
		}
	}
	// Heal, wait for everyone, then one clean run completes: no state lost.
	for i, h := range hosts {
		h.proxy.mu.Lock()
		h.proxy.resetCommit, h.proxy.stallUntil = false, time.Time{}
		h.proxy.mu.Unlock()
		if h.cmd != nil {
			select {
			case err := <-h.done:
				exited(i, h, err)
			case <-time.After(60 * time.Second):
				fail("host %d never exited", i)
			}
		}
	}
	// The clean run proves that no state was lost, not the lease's timing:
	// it holds a lease of 10s. With the model's 1s, a host at load 30–45
	// (renewals past the trusted 800ms) lost its own lease before its first
	// page and exited 4, as documented (docs/operations.md, "Leases").
	h := hosts[0]
	h.env[0] = "IDEMSYNC_STATE=" + pgStateURL(t, viaProxy(h.proxy), schema, (10*time.Second).String())
	start(h)
	err = <-h.done
	var res struct{ Status string }
	if json.Unmarshal(h.out.Bytes(), &res); exitCode(err) != 0 || res.Status != "completed" {
		// The last run may have found the lease of a host killed just
		// before; once that lease ran out, the next run completes.
		time.Sleep(lease * 3 / 2)
		start(h)
		err = <-h.done
		if json.Unmarshal(h.out.Bytes(), &res); exitCode(err) != 0 || res.Status != "completed" {
			fail("the last clean run: exit %d, status %q: %s %s", exitCode(err), res.Status, h.out, h.errs)
		}
	}
	exited(0, h, err)
	pages, resets := 0, 0
	for _, h := range hosts {
		p, r := h.proxy.commitCounts()
		pages, resets = pages+p, resets+r
	}
	// The mode is the one meant: a fenced target's pages were fenced, a
	// joined one has no fences table.
	var fenced int
	if joined {
		err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE oid = to_regclass($1)`, S+"._idemsync_fences").Scan(&fenced)
	} else {
		err = conn.QueryRow(ctx, `SELECT count(*) FROM `+H+`.fences`).Scan(&fenced)
	}
	if err != nil {
		t.Fatal(err)
	}
	if (fenced > 0) == joined {
		fail("joined %v, but %d fences in the target", joined, fenced)
	}
	t.Logf("seed %d: %d runs completed, exits %v, %d page commits, %d connections reset right after one", seed, completed, exits, pages, resets)
	return resets
}

// checkHistory checks the database's history of leases and pages: no page
// committed under a token a later acquisition had superseded when it
// committed, and no lease acquired while the previous token's lease ran.
func checkHistory(t *testing.T, conn *pgx.Conn, H string, seed uint64) {
	t.Helper()
	ctx := context.Background()
	var bad []string
	rows, err := conn.Query(ctx, `SELECT p.run_id, p.seq, p.token, h.token FROM `+H+`.pages p
		JOIN `+H+`.leases h ON h.token > p.token AND h.at < p.at`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var run, seq, tok, newer int64
		if err := rows.Scan(&run, &seq, &tok, &newer); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, fmt.Sprintf("page %d of run %d committed with token %d after token %d was taken", seq, run, tok, newer))
	}
	rows.Close()
	// The first row of each token is its acquisition; the previous token's
	// last row is its last renewal or its release.
	rows, err = conn.Query(ctx, `WITH firsts AS (SELECT DISTINCT ON (token) token, acquired_at FROM `+H+`.leases ORDER BY token, id),
		lasts AS (SELECT DISTINCT ON (token) token, expires_at FROM `+H+`.leases ORDER BY token, id DESC)
		SELECT f.token, f.acquired_at, l.expires_at FROM firsts f JOIN lasts l ON l.token = f.token - 1 WHERE f.acquired_at < l.expires_at`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tok int64
		var at, until time.Time
		if err := rows.Scan(&tok, &at, &until); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, fmt.Sprintf("token %d acquired at %s while token %d's lease ran until %s", tok, at.Format(time.RFC3339Nano), tok-1, until.Format(time.RFC3339Nano)))
	}
	rows.Close()
	// A fenced target: no page committed under a token lower than one
	// that committed before it.
	rows, err = conn.Query(ctx, `SELECT a.token, b.token FROM `+H+`.fences a
		JOIN `+H+`.fences b ON b.key = a.key AND b.id < a.id AND b.token > a.token`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tok, newer int64
		if err := rows.Scan(&tok, &newer); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, fmt.Sprintf("a target page committed with token %d after one with token %d", tok, newer))
	}
	rows.Close()
	if len(bad) > 0 {
		t.Fatalf("seed %d: the database's history breaks the lease:\n%s", seed, strings.Join(bad, "\n"))
	}
}

// TestProxyPageCommitReset pins what the multi-host model's proxy does
// when armed: it resets the connection after the database committed a
// page and before the answer reached idemsync. In one transaction per
// page (joined), idemsync reads the checkpoint back, finds the page
// committed and goes on (sync/pagewrite.go): the run completes with one
// warning saying so, and the table equals the source.
func TestProxyPageCommitReset(t *testing.T) {
	pg := postgresURL(t)
	schema := freshSchema(t, pg)
	api := fakeapi.New(fakeapi.Options{Records: 120, Seed: 7})
	u := mustURL(t, pg)
	p := startProxy(t, u.Host)
	_, port, err := net.SplitHostPort(p.addr())
	if err != nil {
		t.Fatal(err)
	}
	via := *u
	via.Host = p.addr()
	target := *u
	target.Host = "127.0.0.1" // no port: PGPORT, the proxy's
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", pgJob("cursor", serve(t, api), target.String(), schema))
	env := []string{"IDEMSYNC_STATE=" + pgStateURL(t, via.String(), schema, "10s"), "PGPORT=" + port}
	p.armCommitReset()
	r := idemsync(t, dir, env, "run", "job.yaml", "--json", "--log-level", "warn")
	var res struct {
		Status string
		Pages  int
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Status != "completed" {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	// Every page the run committed was seen committing (a prepared
	// statement's too), and the first one lost its answer.
	if pages, resets := p.commitCounts(); resets != 1 || pages != res.Pages || pages < 2 {
		t.Fatalf("%d page commits seen, %d resets after one; the run committed %d pages: want every one seen, one reset\n%s", pages, resets, res.Pages, r.stderr)
	}
	if !strings.Contains(r.stderr, "commit was not acknowledged, but its checkpoint reads back committed") {
		t.Errorf("no warning of the lost answer: the reset did not land after the page's commit\n%s", r.stderr)
	}
	assertEqualSource(t, readPostgres(t, pg, pgx.Identifier{schema, "orders"}), sourceRows(api))
}
