package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
	"github.com/jackc/pgx/v5"
)

// otherRoute is pg reached by another host name (127.0.0.1 and localhost):
// the same database, which idemsync cannot tell is the same, so it keeps
// the state and the target apart as for two databases (a fenced target).
func otherRoute(t *testing.T, pg string) string {
	t.Helper()
	u := mustURL(t, pg)
	switch u.Hostname() {
	case "127.0.0.1":
		u.Host = strings.Replace(u.Host, "127.0.0.1", "localhost", 1)
	case "localhost":
		u.Host = strings.Replace(u.Host, "localhost", "127.0.0.1", 1)
	default:
		t.Skip("the test server's host is neither 127.0.0.1 nor localhost: no second route to it")
	}
	return u.String()
}

// Killed right after a page's rows committed: with the state in the
// target's database the checkpoint committed with them (the crash window
// "rows committed, checkpoint not" is gone); with the state apart it did
// not. Either way the next run completes the table equal to the source
// (docs/guarantees.md, "One transaction per page").
func TestSingleTransactionPage(t *testing.T) {
	pg := postgresURL(t)
	for _, tc := range []struct {
		name   string
		target string
		pages  int64 // committed pages of the run after a kill on page 2's rows
	}{{"joined", pg, 2}, {"apart", otherRoute(t, pg), 1}} {
		t.Run(tc.name, func(t *testing.T) {
			api, apiURL := startAPI(t, fakeapi.Options{Records: 100})
			schema := freshSchema(t, pg)
			state := pgStateURL(t, pg, schema, "1s")
			env := []string{"IDEMSYNC_STATE=" + state}
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", pgJob("page", apiURL, tc.target, schema))
			r := idemsync(t, dir, append(env, "IDEMSYNC_TEST_FAILPOINT=target-committed:2"), "run", job, "--quiet")
			if r.code == 0 {
				t.Fatalf("the failpoint did not kill the run: %s", r.stderr)
			}
			st := statusOf(t, dir, job, "--state", state)
			if st.LastRun == nil || st.LastRun.Pages != tc.pages {
				t.Fatalf("after a kill on page 2's rows: last run %+v, want %d committed pages", st.LastRun, tc.pages)
			}
			if n := len(readPostgres(t, pg, pgx.Identifier{schema, "orders"})); n != 50 {
				t.Errorf("%d rows after two pages of 25, want 50", n)
			}
			runCode(t, dir, env, 0, "run", job, "--if-running", "wait=20s")
			assertEqualSource(t, readPostgres(t, pg, pgx.Identifier{schema, "orders"}), sourceRows(api))
		})
	}
}

// A holder paused past its lease while another host takes the job over
// cannot commit rows to a target in another database: it finds its lease
// past its trusted time before it writes, or the target's fence holds the
// newer token and refuses the stale page; either way exit 4, and the table
// equals the source (docs/guarantees.md, "Fenced targets").
func TestFencedTargetRefusesStaleHolder(t *testing.T) {
	pg := postgresURL(t)
	schema := freshSchema(t, pg)
	state := pgStateURL(t, pg, schema, "1s")
	env := []string{"IDEMSYNC_STATE=" + state}
	api := fakeapi.New(fakeapi.Options{Records: 300, Latency: 2 * time.Millisecond})
	g := &gate{h: api, n: "5", arrived: make(chan struct{}), open: make(chan struct{})}
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", pgJob("page", serve(t, g), otherRoute(t, pg), schema))

	first, errOut, done := startIdemsync(t, dir, env, "run", job, "--quiet")
	g.reached(t, errOut, done)
	// Paused once the pages before the gated one are committed: the walk
	// fetches ahead of its commits (docs/guarantees.md, "Commit order"),
	// and a holder stopped inside a page's transaction would keep that
	// page's rows locked from the next holder until target.timeout.lock.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(idemsync(t, dir, env, "status", job, "--json").stdout, `"checkpoint":"page 5"`); {
		if time.Now().After(deadline) {
			t.Fatal("the first holder never committed the pages before the gated one")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the first one's lease
	runCode(t, dir, env, 0, "run", job)
	_ = first.Process.Signal(syscall.SIGCONT)
	close(g.open)
	err := <-done
	if code := exitCode(err); code != 4 || !strings.Contains(errOut.String(), "the target refused the page") && !strings.Contains(errOut.String(), "was lost; this process stops without writing") {
		t.Errorf("the stale holder, continued: exit %d, want 4 with the lease lost or the target's refusal: %s", code, errOut)
	}
	var key string
	var token int64
	conn, cerr := pgx.Connect(context.Background(), pg)
	if cerr != nil {
		t.Fatal(cerr)
	}
	defer conn.Close(context.Background())
	// The fence holds the second holder's token, the job's lease row's
	// (its first token is the database clock in milliseconds, one more
	// per takeover).
	var leaseToken int64
	if err := conn.QueryRow(context.Background(), `SELECT token FROM `+pgx.Identifier{schema, "leases"}.Sanitize()+` WHERE job = 'orders-page'`).Scan(&leaseToken); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(context.Background(), `SELECT key, token FROM `+pgx.Identifier{schema, "_idemsync_fences"}.Sanitize()).Scan(&key, &token); err != nil || token != leaseToken || !strings.HasSuffix(key, "/orders-page") {
		t.Errorf("the target's fence: %q %d (%v), want the job's key at the lease's token %d", key, token, err, leaseToken)
	}
	assertEqualSource(t, readPostgres(t, pg, pgx.Identifier{schema, "orders"}), sourceRows(api))
}
