package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	gosync "sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
)

// TokenStore keeps the rotated OAuth2 refresh tokens of a job file durably
// (the state store's part for them), one per credential.
type TokenStore = contract.TokenStore

// reseedHint tells how to recover from a refused or lost refresh token.
const reseedHint = "get a new refresh token from the provider and put it in source.auth.refresh_token (a changed seed replaces the stored token)"

// saveWaits are the pauses between the attempts to store a rotated
// refresh token (a full disk, a busy file): about 3 s in all.
var saveWaits = []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond}

// CredentialID identifies an oauth2_refresh_token credential: its token
// URL, client and seed. Resources of one job file with the same
// credential share one stored token (docs/job-file.md, Auth).
func CredentialID(a *spec.Auth) string {
	sum := sha256.Sum256([]byte(a.TokenURL + "\x00" + a.ClientID + "\x00" + a.RefreshToken))
	return hex.EncodeToString(sum[:])
}

func seedHash(a *spec.Auth) string {
	sum := sha256.Sum256([]byte(a.RefreshToken))
	return hex.EncodeToString(sum[:])
}

// chain is the rotated refresh token of one credential, shared by every
// resource using it in this process. A token received is kept here for
// the life of the process, stored or not, so a spent token is never sent
// again.
type chain struct {
	mu         gosync.Mutex
	id, seed   string // credential ID, seed hash
	loaded     bool   // cur holds the token to send next
	cur        string
	fromSeed   bool  // cur is the seed of the job file
	wasPending bool  // cur was stored with an exchange left unfinished
	unsaved    error // why cur, received from the provider, is not stored yet
	o          Options
}

// newRefreshToken gets access tokens with the refresh token grant (RFC
// 6749 §6) through the credential's chain; access tokens are cached per
// resource, sent through base.
func newRefreshToken(a *spec.Auth, base http.RoundTripper, red *idsync.Redactor, o Options) credential {
	cfg := &oauth2.Config{ClientID: a.ClientID, ClientSecret: a.ClientSecret, Scopes: a.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: a.TokenURL, AuthStyle: authStyle(a.AuthStyle)}}
	c := o.Keyring.chain(a, o)
	return newTokenCache(red, func(ctx context.Context) (*oauth2.Token, error) {
		return c.exchange(ctx, a, cfg, base, red)
	})
}

func storeErr(err error) error {
	return permanent("auth oauth2_refresh_token: store the refresh token in the state file", "", err)
}

// exchange sends the chain's current refresh token for an access token
// and keeps the rotated one: stored and synced the moment the exchange
// returns, before the new access token is used; kept in memory whatever
// the store says.
func (c *chain) exchange(ctx context.Context, a *spec.Auth, cfg *oauth2.Config, base http.RoundTripper, red *idsync.Redactor) (*oauth2.Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		if err := c.load(ctx, a, red); err != nil {
			return nil, err
		}
	}
	cur := c.cur
	// The token's writes go on after a signal (the token is spent at the
	// provider once sent), for the grace only.
	wctx, stop := c.o.Keyring.writeContext(ctx)
	defer stop()
	// Mark the exchange as sent: a crash before its answer is stored can
	// lose a rotated token, and the next run must say so. For a token
	// received and not yet stored this is the write tried again.
	if err := c.o.Store.SaveRefreshToken(wctx, c.o.Job, c.id, c.seed, cur, true); err != nil {
		if c.unsaved != nil {
			return nil, c.lostErr(err)
		}
		return nil, storeErr(err)
	}
	c.unsaved = nil
	tok, err := cfg.TokenSource(exchangeContext(ctx, base), &oauth2.Token{RefreshToken: cur}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			// Answered: no exchange is left unfinished.
			_ = c.o.Store.SaveRefreshToken(wctx, c.o.Job, c.id, c.seed, cur, false)
			return nil, permanent("auth oauth2_refresh_token: "+c.refusal(), reseedHint, nil)
		}
		return nil, classify(a.Type, err)
	}
	next := tok.RefreshToken
	if next == "" {
		next = cur
	}
	red.Add(next)
	c.cur, c.fromSeed, c.wasPending = next, false, false
	// Stored even if the run is being cancelled: the old token is spent.
	if err := c.save(wctx); err != nil {
		c.unsaved = err
		c.o.Logger.Error("the rotated refresh token could not be stored in the state file; it is kept in memory and stored again at the next exchange and when the run ends", "err", err)
	} else if next != cur {
		c.o.Logger.Debug("rotated refresh token stored in the state file")
	}
	return tok, nil
}

// load reads the chain's token from the store (the seed when none is
// stored) and drops the tokens of credentials the job file no longer uses.
func (c *chain) load(ctx context.Context, a *spec.Auth, red *idsync.Redactor) error {
	tok, pending, err := c.o.Store.LoadRefreshToken(ctx, c.o.Job, c.id, c.seed)
	if err != nil {
		return storeErr(err)
	}
	c.cur, c.fromSeed = a.RefreshToken, true
	if tok != "" {
		c.cur, c.fromSeed, c.wasPending = tok, false, pending
		red.Add(tok)
	}
	c.loaded = true
	if n, err := c.o.Keyring.prune(ctx, c.o); err != nil {
		c.o.Logger.Warn("refresh tokens of credentials no longer used are kept", "err", err)
	} else if n > 0 {
		c.o.Logger.Info("source.auth changed: the refresh tokens of credentials the job file no longer uses were removed", "tokens", n)
	}
	return nil
}

// save stores the chain's current token, trying again for a while (until
// ctx ends): a token the provider rotated exists nowhere else.
func (c *chain) save(ctx context.Context) error {
	var err error
	for i := 0; ; i++ {
		if err = c.o.Store.SaveRefreshToken(ctx, c.o.Job, c.id, c.seed, c.cur, false); err == nil || i == len(saveWaits) || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(saveWaits[i]):
		case <-ctx.Done():
			return err
		}
	}
}

// refusal says which refresh token the provider refused (invalid_grant).
func (c *chain) refusal() string {
	switch {
	case c.wasPending:
		return "token endpoint refused the refresh token (invalid_grant): an earlier run stopped during a refresh token exchange, so the rotated token it was sent may be lost"
	case c.fromSeed:
		return "token endpoint refused the refresh token given in source.auth.refresh_token (invalid_grant: revoked, expired, or already used, e.g. by another job file or state file)"
	}
	return "token endpoint refused the refresh token stored in the state file (invalid_grant: revoked or expired, or used by another copy of this state file)"
}

// lostErr says that the refresh token received cannot be stored: the
// state file holds only the spent one, so a new seed is needed.
func (c *chain) lostErr(err error) error {
	return permanent("auth oauth2_refresh_token: the provider rotated the refresh token and the new one could not be stored in the state file; "+
		"the token stored there is spent, so the next run cannot authenticate", reseedHint+"; the state file must be writable (free space)", err)
}

// Keyring holds the oauth2_refresh_token chains of one invocation, one per
// credential, shared by every resource of the job file that uses it.
type Keyring struct {
	mu     gosync.Mutex
	chains map[string]*chain
	// keep and seeds are the credentials and seeds the job file uses;
	// nil keeps every stored token.
	keep, seeds []string
	pruned      bool
	graceEnd    time.Time // when the token writes after a signal give up
}

// writeContext returns the context a refresh token's write runs under: not
// ended by ctx (a signal: a rotated token is spent at the provider and
// exists nowhere else), but idsync.WriteGrace after the first signal this
// keyring saw, for every write of the invocation together, so a state
// that does not answer (a file another process keeps locked, a frozen
// server) cannot keep the process from exiting (docs/operations.md,
// "Signals"). stop releases it.
func (k *Keyring) writeContext(ctx context.Context) (context.Context, func()) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopAfter := context.AfterFunc(ctx, func() {
		k.mu.Lock()
		if k.graceEnd.IsZero() {
			k.graceEnd = time.Now().Add(idsync.WriteGrace)
		}
		end := k.graceEnd
		k.mu.Unlock()
		time.AfterFunc(time.Until(end), cancel)
	})
	return wctx, func() {
		stopAfter()
		cancel()
	}
}

// NewKeyring returns the keyring of a job file whose resources use auths;
// the stored tokens of other credentials are removed at the first
// exchange. With no auths nothing stored is removed.
func NewKeyring(auths ...*spec.Auth) *Keyring {
	k := &Keyring{chains: map[string]*chain{}}
	for _, a := range auths {
		if a != nil && a.Type == idsync.AuthRefreshToken {
			k.keep = append(k.keep, CredentialID(a))
			k.seeds = append(k.seeds, seedHash(a))
		}
	}
	return k
}

func (k *Keyring) chain(a *spec.Auth, o Options) *chain {
	k.mu.Lock()
	defer k.mu.Unlock()
	id := CredentialID(a)
	c := k.chains[id]
	if c == nil {
		c = &chain{id: id, seed: seedHash(a), o: o}
		k.chains[id] = c
	}
	return c
}

func (k *Keyring) prune(ctx context.Context, o Options) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pruned || k.keep == nil {
		return 0, nil
	}
	k.pruned = true
	return o.Store.DropRefreshTokens(ctx, o.Job, k.keep, k.seeds)
}

// Flush stores the refresh tokens received and not stored yet (trying
// again for a while). It returns a *contract.Error (exit 1) saying a new
// seed is needed when one still cannot be stored.
func (k *Keyring) Flush(ctx context.Context) error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	chains := make([]*chain, 0, len(k.chains))
	for _, c := range k.chains {
		chains = append(chains, c)
	}
	k.mu.Unlock()
	wctx, stop := k.writeContext(ctx)
	defer stop()
	for _, c := range chains {
		c.mu.Lock()
		if c.unsaved != nil {
			if err := c.save(wctx); err != nil {
				c.mu.Unlock()
				return c.lostErr(err)
			}
			c.unsaved = nil
		}
		c.mu.Unlock()
	}
	return nil
}
