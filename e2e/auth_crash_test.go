package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// authStart starts the binary in dir and returns it running.
func authStart(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command(binary, args...)
	c.Dir = dir
	c.Env = append(testEnv(dir, args...), env...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _, _ = c.Process.Wait() })
	return c
}

// SIGKILL of the real binary around a refresh-token rotation. Killed once
// the rotated token is stored (while the API answers the first page): the
// next run uses the stored token and completes. Killed inside the
// exchange (the provider rotated, the answer never arrived): the next run
// fails with exit 1 and says how to re-seed, then a new seed completes.
func TestAuthRefreshTokenKill(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	inAPI, inToken := make(chan struct{}, 1), make(chan struct{}, 1)
	hold := make(chan struct{})
	var blockAPI, blockToken bool
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-mu
		b := blockAPI
		blockAPI = false
		mu <- struct{}{}
		if b {
			inAPI <- struct{}{}
			<-hold
			return
		}
		if _, err := o.srv.ValidationBearerToken(r); err != nil {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		authPage(w, r)
	}))
	tokenURL := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-mu
		b := blockToken
		blockToken = false
		mu <- struct{}{}
		rec := httptest.NewRecorder()
		_ = o.srv.HandleTokenRequest(rec, r) // the provider rotates the token
		if b {
			inToken <- struct{}{}
			<-hold
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(func() { close(hold) }) // before the servers close
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authJob(api, fmt.Sprintf(`    type: oauth2_refresh_token
    token_url: %s/token
    client_id: %s
    client_secret: %s
    refresh_token: "${RT}"`, tokenURL, authClientID, authClientSecret)))
	env := []string{"RT=" + o.seedRefresh(t)}
	wait := func(ch chan struct{}) {
		select {
		case <-ch:
		case <-time.After(60 * time.Second):
			t.Fatal("the binary never reached the point to kill it at")
		}
	}

	// 1. Killed after the exchange: the stored token carries on.
	<-mu
	blockAPI = true
	mu <- struct{}{}
	c := authStart(t, dir, env, "run", "job.yaml")
	wait(inAPI)
	_ = c.Process.Kill()
	_, _ = c.Process.Wait()
	if r := idemsync(t, dir, env, "run", "job.yaml"); r.code != 0 {
		t.Fatalf("after a kill past the exchange: exit %d\n%s", r.code, r.stderr)
	}

	// 2. Killed inside the exchange: a clear error, no 401 loop.
	<-mu
	blockToken = true
	mu <- struct{}{}
	c = authStart(t, dir, env, "run", "job.yaml")
	wait(inToken)
	_ = c.Process.Kill()
	_, _ = c.Process.Wait()
	r := idemsync(t, dir, env, "run", "job.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "stopped during a refresh token exchange") || !strings.Contains(r.stderr, "source.auth.refresh_token") {
		t.Fatalf("after a kill inside the exchange: exit %d, want 1 with a re-seed hint\n%s", r.code, r.stderr)
	}
	if r := idemsync(t, dir, []string{"RT=" + o.seedRefresh(t)}, "run", "job.yaml"); r.code != 0 {
		t.Errorf("after re-seeding: exit %d\n%s", r.code, r.stderr)
	}
}
