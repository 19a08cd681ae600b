//go:build linux

package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A SIGTERM while the state file cannot take a rotated refresh token
// (another process holds its write lock from the moment the provider
// rotated the token): the process tries to store it for the write grace
// after the signal, not without bound, then says plainly that a new seed
// is needed (exit 1), and the token endpoint is asked once
// (docs/operations.md, "Signals"). Before, every store of the token (the
// exchange's, then the one as the run ends) tried six times, each waiting
// out the state file's 10 s busy timeout: over two minutes after the
// signal.
func TestAuthRotatedTokenSignalBounded(t *testing.T) {
	skipWithPostgresState(t, "holds the state file's write lock")
	o := authNewOAuth(t, time.Hour, 0)
	dir := t.TempDir()
	state := filepath.Join(dir, ".idemsync", "state.db")
	var pid atomic.Int64
	var arm atomic.Bool
	var exchanges atomic.Int64
	var signalled atomic.Int64 // unix nanoseconds
	held := make(chan *sql.Conn, 1)
	tokenURL := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		exchanges.Add(1)
		rec := httptest.NewRecorder()
		_ = o.srv.HandleTokenRequest(rec, r) // the provider rotates the token
		if p := int(pid.Load()); p != 0 && arm.Swap(false) {
			conn, err := openSQLite(t, state).Conn(context.Background())
			if err == nil {
				_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
			}
			if err != nil {
				t.Errorf("hold the state file's write lock: %v", err)
			} else {
				held <- conn
			}
			time.AfterFunc(300*time.Millisecond, func() {
				signalled.Store(time.Now().UnixNano())
				_ = syscall.Kill(p, syscall.SIGTERM)
			})
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	writeJob(t, dir, "job.yaml", authJob(o.apiURL, fmt.Sprintf(`    type: oauth2_refresh_token
    token_url: %s/token
    client_id: %s
    client_secret: %s
    refresh_token: "${RT}"`, tokenURL, authClientID, authClientSecret)))
	env := []string{"RT=" + o.seedRefresh(t)}
	if r := idemsync(t, dir, env, "run", "job.yaml"); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	exchanges.Store(0)
	arm.Store(true)
	c := exec.Command(binary, "run", "job.yaml", "--full")
	c.Dir, c.Env = dir, append(cleanEnv(), env...)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid.Store(int64(c.Process.Pid))
	killer := time.AfterFunc(40*time.Second, func() { _ = c.Process.Kill() })
	defer killer.Stop()
	code := hardWaitExit(t, c)
	select {
	case conn := <-held:
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
	default:
		t.Fatal("the run never exchanged its refresh token")
	}
	took := time.Since(time.Unix(0, signalled.Load()))
	t.Logf("exit %d %s after the signal\n%s", code, took.Round(time.Millisecond), errOut.String())
	// 5 s of grace, then at most 1 s each for the metrics and the lock's
	// holder note.
	if took > 9*time.Second {
		t.Errorf("exited %s after the signal (exit %d): the rotated token's store did not stop at the grace", took.Round(time.Millisecond), code)
	}
	if code != 1 || !strings.Contains(errOut.String(), "the new one could not be stored in the state file") ||
		!strings.Contains(errOut.String(), "source.auth.refresh_token") {
		t.Errorf("exit %d, want 1 saying a new seed is needed\n%s", code, errOut.String())
	}
	if n := exchanges.Load(); n != 1 {
		t.Errorf("%d token requests, want 1 (a spent refresh token must never be sent again)", n)
	}
}
