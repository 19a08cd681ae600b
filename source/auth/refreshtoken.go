package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	gosync "sync"

	"golang.org/x/oauth2"

	idsync "github.com/idemsync/idemsync/sync"
)

// TokenStore keeps a job's rotated OAuth2 refresh token durably (the state
// file; checkpoint.Store implements it). seedHash identifies the spec's
// seed token, so that a changed seed wins over the stored token; pending
// marks an exchange that was sent and whose answer was not yet stored.
type TokenStore interface {
	// LoadAuthToken returns the stored token of job ("" when none).
	LoadAuthToken(ctx context.Context, job string) (seedHash, token string, pending bool, err error)
	// SaveAuthToken stores job's token and syncs it to disk before returning.
	SaveAuthToken(ctx context.Context, job, seedHash, token string, pending bool) error
}

// reseedHint tells how to recover from a refused refresh token.
const reseedHint = "get a new refresh token from the provider and put it in source.auth.refresh_token (a changed seed replaces the stored token)"

// refreshToken gets access tokens with the refresh token grant (RFC 6749
// §6). Single-use (rotated) refresh tokens are stored, and synced, the
// moment the exchange returns, before the new access token is used.
type refreshToken struct {
	a    *idsync.Auth
	cfg  *oauth2.Config
	base http.RoundTripper
	red  *idsync.Redactor
	o    Options
	seed string
	mu   gosync.Mutex
	cur  string // refresh token to use next; "" = read the store
}

func newRefreshToken(a *idsync.Auth, base http.RoundTripper, red *idsync.Redactor, o Options) credential {
	sum := sha256.Sum256([]byte(a.RefreshToken))
	rt := &refreshToken{a: a, base: base, red: red, o: o, seed: hex.EncodeToString(sum[:]),
		cfg: &oauth2.Config{ClientID: a.ClientID, ClientSecret: a.ClientSecret, Scopes: a.Scopes,
			Endpoint: oauth2.Endpoint{TokenURL: a.TokenURL, AuthStyle: authStyle(a.AuthStyle)}}}
	return &tokenCache{red: red, fetch: rt.exchange}
}

func (r *refreshToken) exchange(ctx context.Context) (*oauth2.Token, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	saveErr := func(err error) error {
		return permanent("auth oauth2_refresh_token: store the refresh token in the state file", "", err)
	}
	cur, wasPending := r.cur, false
	if cur == "" {
		seed, tok, pending, err := r.o.Store.LoadAuthToken(ctx, r.o.Job)
		if err != nil {
			return nil, saveErr(err)
		}
		cur = r.a.RefreshToken
		if seed == r.seed && tok != "" {
			cur, wasPending = tok, pending
			r.red.Add(tok)
		} else if seed != "" {
			r.o.Logger.Info("source.auth.refresh_token changed: the new seed replaces the stored refresh token")
		}
	}
	// Mark the exchange as sent: a crash before its answer is stored can
	// lose a rotated token, and the next run must say so.
	if err := r.o.Store.SaveAuthToken(ctx, r.o.Job, r.seed, cur, true); err != nil {
		return nil, saveErr(err)
	}
	tok, err := r.cfg.TokenSource(exchangeContext(ctx, r.base), &oauth2.Token{RefreshToken: cur}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			msg := "token endpoint refused the refresh token (invalid_grant: revoked, expired or already used)"
			if wasPending {
				msg = "token endpoint refused the refresh token (invalid_grant): an earlier run stopped during a refresh token exchange, so the rotated token it was sent may be lost"
			}
			return nil, permanent("auth oauth2_refresh_token: "+msg, reseedHint, nil)
		}
		return nil, classify(r.a.Type, err)
	}
	next := tok.RefreshToken
	if next == "" {
		next = cur
	}
	r.red.Add(next)
	// Stored even if the run is being cancelled: the old token is spent.
	if err := r.o.Store.SaveAuthToken(context.WithoutCancel(ctx), r.o.Job, r.seed, next, false); err != nil {
		return nil, saveErr(err)
	}
	r.cur = next
	if next != cur {
		r.o.Logger.Debug("rotated refresh token stored in the state file")
	}
	return tok, nil
}
