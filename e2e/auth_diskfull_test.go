//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The state file cannot take the rotated refresh token when the token
// endpoint answers: the kernel refuses the binary's file writes (its
// RLIMIT_FSIZE is lowered to one byte with prlimit while the exchange is
// answered, as a full disk would: every write that extends a file fails).
// The received token is never thrown away nor is the spent one sent again:
// when the space comes back within the write's retries the run completes
// and the token is stored; when it never does, the run says plainly that
// a new seed is needed, printing no secret.
func TestAuthRefreshTokenStateWriteFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restore time.Duration // 0: never during the run
		code    int
	}{
		{"space comes back", 300 * time.Millisecond, 0},
		{"space never comes back", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := authNewOAuth(t, time.Hour, 0)
			var pid atomic.Int64
			var arm atomic.Bool
			var exchanges atomic.Int64
			tokenURL := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				exchanges.Add(1)
				rec := httptest.NewRecorder()
				_ = o.srv.HandleTokenRequest(rec, r) // the provider rotates the token
				if p := int(pid.Load()); p != 0 && arm.Swap(false) {
					if err := unix.Prlimit(p, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 1, Max: unix.RLIM_INFINITY}, nil); err != nil {
						t.Errorf("prlimit: %v", err)
					}
					if tc.restore > 0 {
						time.AfterFunc(tc.restore, func() {
							_ = unix.Prlimit(p, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}, nil)
						})
					}
				}
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				_, _ = w.Write(rec.Body.Bytes())
			}))
			dir := t.TempDir()
			writeJob(t, dir, "job.yaml", authJob(o.apiURL, fmt.Sprintf(`    type: oauth2_refresh_token
    token_url: %s/token
    client_id: %s
    client_secret: %s
    refresh_token: "${RT}"`, tokenURL, authClientID, authClientSecret)))
			seed := o.seedRefresh(t)
			env := []string{"RT=" + seed}
			if r := idemsync(t, dir, env, "run", "job.yaml"); r.code != 0 {
				t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
			}
			stored := storedRefreshTokens(t, dir)
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
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			var code int
			select {
			case err := <-done:
				code = c.ProcessState.ExitCode()
				_ = err
			case <-time.After(90 * time.Second):
				_ = c.Process.Kill()
				t.Fatal("the run did not end")
			}
			r := result{code: code, stdout: out.String(), stderr: errOut.String()}
			if arm.Load() {
				t.Fatal("the run never exchanged its refresh token")
			}
			(&canaryScan{canaries: append([]string{seed, authClientSecret}, stored...)}).result(t, "run", r)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%s", r.code, tc.code, r.stderr)
			}
			if n := exchanges.Load(); n != 1 {
				t.Errorf("%d token requests, want 1 (a spent refresh token must never be sent again)\n%s", n, r.stderr)
			}
			t.Logf("DEBUG %s", r.stderr)
			if tc.code != 0 {
				if !regexp.MustCompile(`(?m)^error: .*the new one could not be stored in the state file`).MatchString(r.stderr) ||
					!strings.Contains(r.stderr, "new refresh token") || !strings.Contains(r.stderr, "source.auth.refresh_token") ||
					strings.Contains(r.stderr, "fetched again on resume") {
					t.Errorf("the error does not say plainly that a new seed is needed\n%s", r.stderr)
				}
				return
			}
			if r := idemsync(t, dir, env, "run", "job.yaml"); r.code != 0 {
				t.Errorf("the run after: exit %d (the rotated token was not kept)\n%s", r.code, r.stderr)
			}
		})
	}
}
