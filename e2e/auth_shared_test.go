package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sharedRefreshJob is a two-resource file whose resources share one
// oauth2_refresh_token credential through defaults: (the Xero example of
// docs/job-file.md read from two endpoints).
func sharedRefreshJob(o *authOAuth) string {
	return fmt.Sprintf(`name: shared
defaults:
  source:
    base_url: %s
    records: data
    auth:
      type: oauth2_refresh_token
      token_url: %s
      client_id: %s
      client_secret: %s
      refresh_token: "${RT}"
  pagination: {style: page}
  retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
  target: {url: "sqlite:out.db", key: [id]}
resources:
  - name: invoices
    source: {path: /invoices}
    target: {table: invoices}
  - name: contacts
    source: {path: /contacts}
    target: {table: contacts}
`, o.apiURL, o.tokenURL, authClientID, authClientSecret)
}

// storedRefreshTokens returns the refresh tokens the state file in dir holds.
func storedRefreshTokens(t *testing.T, dir string) []string {
	t.Helper()
	rows, err := openSQLite(t, filepath.Join(dir, ".idemsync", "state.db")).Query(`SELECT token FROM auth_credentials`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// One credential shared by two resources is one rotated token chain:
// every run of the file completes with single-use refresh tokens, the
// state file holds one token, and a stored token that someone else spent
// is reported as that, not as an interrupted exchange.
func TestAuthRefreshTokenSharedByResources(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	seed := o.seedRefresh(t)
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", sharedRefreshJob(o))
	env := []string{"RT=" + seed}
	var rs []result
	for i := 0; i < 3; i++ {
		r := idemsync(t, dir, env, "run", "job.yaml")
		rs = append(rs, r)
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i+1, r.code, r.stderr)
		}
	}
	stored := storedRefreshTokens(t, dir)
	if len(stored) != 1 || stored[0] == seed {
		t.Fatalf("the state file holds %d refresh tokens, want the one rotated token of the shared credential", len(stored))
	}
	scan := &canaryScan{canaries: []string{authClientSecret, seed, stored[0]}}
	for i, r := range rs {
		scan.result(t, fmt.Sprintf("run %d", i+1), r)
	}

	// Someone else spends the stored token: the message says so.
	resp, err := http.PostForm(o.tokenURL, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {stored[0]},
		"client_id": {authClientID}, "client_secret": {authClientSecret}})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("spend the stored token: %v %v", resp, err)
	}
	resp.Body.Close()
	for i := 0; i < 2; i++ {
		r := idemsync(t, dir, env, "run", "job.yaml")
		scan.result(t, "refused run", r)
		if r.code != 1 || strings.Contains(r.stderr, "stopped during") || !strings.Contains(r.stderr, "stored in the state file") ||
			!strings.Contains(r.stderr, "source.auth.refresh_token") {
			t.Errorf("stored token spent elsewhere, run %d: exit %d, want 1 saying the stored token was refused\n%s", i+1, r.code, r.stderr)
		}
	}
	// A new seed carries on and replaces the spent chain.
	env = []string{"RT=" + o.seedRefresh(t)}
	if r := idemsync(t, dir, env, "run", "job.yaml"); r.code != 0 {
		t.Fatalf("new seed: exit %d\n%s", r.code, r.stderr)
	}
	if n := len(storedRefreshTokens(t, dir)); n != 1 {
		t.Errorf("after a new seed the state file holds %d refresh tokens, want 1", n)
	}
}
