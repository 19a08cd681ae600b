package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// An access token the API revokes mid-run gives one 401: idemsync fetches a
// new token from the OAuth2 server once and retries the same page, and the
// run completes with every row.
func TestAuthOAuth2RevokedTokenRefreshesOnce(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	o.revokeAt.Store(2)
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authJob(o.apiURL, fmt.Sprintf(`    type: oauth2_client_credentials
    token_url: %s
    client_id: %s
    client_secret: %s`, o.tokenURL, authClientID, authClientSecret)))
	r := idemsync(t, dir, nil, "run", "job.yaml", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if n := o.api401.Load(); n != 1 {
		t.Errorf("the API answered 401 %d times, want exactly 1 (the revoked token)", n)
	}
	if n := o.tokens.Load(); n != 2 {
		t.Errorf("%d token requests, want 2 (the first, and one after the 401)", n)
	}
	if n := authRows(t, dir); n != 6 {
		t.Errorf("%d rows, want 6", n)
	}
	authScanAll(t, dir, &canaryScan{canaries: []string{authClientSecret}}, r)
}

// An API that refuses every fresh token: one refresh, then exit 1 with a
// hint naming the auth type, never a loop of 401s.
func TestAuthOAuth2SecondUnauthorizedIsPermanent(t *testing.T) {
	o := authNewOAuth(t, time.Hour, 0)
	o.deny.Store(true)
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", authJob(o.apiURL, fmt.Sprintf(`    type: oauth2_client_credentials
    token_url: %s
    client_id: %s
    client_secret: %s`, o.tokenURL, authClientID, authClientSecret)))
	r := idemsync(t, dir, nil, "run", "job.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "oauth2_client_credentials") {
		t.Errorf("exit %d, want 1 with a hint naming oauth2_client_credentials:\n%s", r.code, r.stderr)
	}
	if n := o.api401.Load(); n != 2 {
		t.Errorf("the API answered 401 %d times, want 2 (first token, refreshed token)", n)
	}
	if n := o.tokens.Load(); n != 2 {
		t.Errorf("%d token requests, want 2", n)
	}
	authScanAll(t, dir, &canaryScan{canaries: []string{authClientSecret}}, r)
}
