package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/jsontext"
)

// Defaults of a claim and of gc (docs/ledger.md).
const (
	DefaultNS   = "default"
	DefaultTTL  = 10 * time.Minute
	DefaultKeep = 30 * 24 * time.Hour // gc: completed and failed keys kept 30 days
)

// Claim is one claim as a caller gives it: flags of `key claim`, or one
// JSON line of `key claim --batch`.
type Claim struct {
	NS          string          `json:"ns,omitempty"`
	Key         string          `json:"key"`
	Params      json.RawMessage `json:"params,omitempty"`
	Fingerprint string          `json:"fingerprint,omitempty"`
	Owner       string          `json:"owner,omitempty"`
	TTL         string          `json:"ttl,omitempty"`        // Go duration; "" DefaultTTL
	OnExpired   string          `json:"on_expired,omitempty"` // retry (default) or hold
}

// isHexFP reports whether s is a fingerprint: 1 to 128 hex digits (not a
// regexp: its compiled {1,128} would cost every process start).
func isHexFP(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Request checks c and makes its store request, with a new token. Errors
// are contract.Invalid naming the field.
func (c Claim) Request() (contract.ClaimRequest, error) {
	r := contract.ClaimRequest{NS: c.NS, Key: c.Key, Owner: c.Owner, OnExpired: c.OnExpired, TTL: DefaultTTL}
	if r.NS == "" {
		r.NS = DefaultNS
	}
	if err := contract.CheckKey("key", r.Key); err != nil {
		return r, err
	}
	if err := contract.CheckKey("namespace", r.NS); err != nil {
		return r, err
	}
	if r.Owner != "" {
		// As a key: PostgreSQL's text holds no NUL nor bytes that are not UTF-8.
		if err := contract.CheckKey("owner", r.Owner); err != nil {
			return r, err
		}
	}
	if c.TTL != "" {
		d, err := time.ParseDuration(c.TTL)
		if err != nil || d <= 0 {
			return r, invalid("ttl %q: want a duration such as 10m or 30s", c.TTL)
		}
		// Stores keep a lease in milliseconds: a shorter one was 0 ms,
		// ended before the claim returned and renewed by nothing
		// (docs/ledger.md, "Commands").
		if d < time.Millisecond {
			return r, invalid("ttl %q: at least 1ms, the unit leases are kept in", c.TTL)
		}
		r.TTL = d
	}
	switch r.OnExpired {
	case "", contract.OnExpiredRetry, contract.OnExpiredHold:
	default:
		return r, invalid("on-expired %q: want retry or hold", r.OnExpired)
	}
	switch {
	case len(c.Params) > 0 && c.Fingerprint != "":
		return r, invalid("give params or a fingerprint, not both")
	case len(c.Params) > 0:
		fp, err := Fingerprint(c.Params)
		if err != nil {
			return r, invalid("params: %v", err)
		}
		r.Fingerprint = fp
	case c.Fingerprint != "":
		if !isHexFP(c.Fingerprint) {
			return r, invalid("fingerprint %q: want hex, at most 128 digits", c.Fingerprint)
		}
		r.Fingerprint = strings.ToLower(c.Fingerprint) // hex: its case carries nothing (docs/ledger.md, "Fingerprints")
	}
	r.Token = NewToken()
	return r, nil
}

func invalid(format string, args ...any) error {
	return &contract.Error{Class: contract.Invalid, Msg: fmt.Sprintf(format, args...)}
}

// NewToken is a new fencing token: 128 random bits in hex.
func NewToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ClaimAll claims every request, in order, through the store's batch.
func ClaimAll(ctx context.Context, l contract.Ledger, reqs []contract.ClaimRequest) ([]Result, error) {
	out, err := l.Claim(ctx, reqs)
	if err != nil {
		return nil, err
	}
	res := make([]Result, len(out))
	for i, o := range out {
		res[i] = FromOutcome(o)
	}
	return res, nil
}

// ClaimWait claims r; while another holder has it (in_progress) or it
// waits for its retry time (retry_later), it claims again until wait has
// passed, polling no later than the holder's lease or the retry time
// ends and at least every poll.
func ClaimWait(ctx context.Context, l contract.Ledger, r contract.ClaimRequest, wait, poll time.Duration) (Result, error) {
	deadline := time.Now().Add(wait)
	for {
		out, err := l.Claim(ctx, []contract.ClaimRequest{r})
		if err != nil {
			return Result{}, err
		}
		o := out[0]
		left := time.Until(deadline)
		if (o.Status != contract.StatusInProgress && o.Status != contract.StatusRetryLater) || left <= 0 {
			return FromOutcome(o), nil
		}
		d := min(poll, left)
		until := o.Entry.ExpiresAt
		if o.Status == contract.StatusRetryLater {
			until = o.Entry.NotBefore
		}
		if u := time.Until(until) + 10*time.Millisecond; u > 0 && u < d {
			d = u
		}
		select {
		case <-ctx.Done():
			// SIGINT/SIGTERM: interrupted (exit 130), nothing claimed.
			return Result{}, contract.Errorf(contract.Interrupted, "interrupted while waiting for the key: %w", contract.ErrInterrupted)
		case <-time.After(d):
		}
	}
}

// Complete records the result (JSON) of the claim holding token.
func Complete(ctx context.Context, l contract.Ledger, ns, key, token string, result []byte) (Result, error) {
	if err := checkNSKey(&ns, key); err != nil {
		return Result{}, err
	}
	if len(result) == 0 {
		result = []byte("null")
	}
	if err := checkJSON("result", result); err != nil {
		return Result{}, err
	}
	e, st, err := l.Complete(ctx, ns, key, token, string(result))
	return fenced(ns, key, e, st), err
}

// Fail records a failed attempt of the claim holding token.
func Fail(ctx context.Context, l contract.Ledger, ns, key, token string, f contract.LedgerFailure) (Result, error) {
	if err := checkNSKey(&ns, key); err != nil {
		return Result{}, err
	}
	if f.Error == "" {
		f.Error = "null"
	}
	if err := checkJSON("error", []byte(f.Error)); err != nil {
		return Result{}, err
	}
	e, st, err := l.Fail(ctx, ns, key, token, f)
	return fenced(ns, key, e, st), err
}

// Heartbeat renews the lease of the claim holding token.
func Heartbeat(ctx context.Context, l contract.Ledger, ns, key, token string) (Result, error) {
	if err := checkNSKey(&ns, key); err != nil {
		return Result{}, err
	}
	e, st, err := l.Heartbeat(ctx, ns, key, token)
	return fenced(ns, key, e, st), err
}

// Get returns a key's entry as a Result whose status is its stored state
// (pending, completed, failed, retry, held), or not_found.
func Get(ctx context.Context, l contract.Ledger, ns, key string) (Result, error) {
	if err := checkNSKey(&ns, key); err != nil {
		return Result{}, err
	}
	e, ok, err := l.Get(ctx, ns, key)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{Status: contract.StatusNotFound, NS: ns, Key: key}, nil
	}
	return FromEntry(e), nil
}

// Resolve sets an operator's outcome of a key: as completed (result),
// failed (error), retry, or forget.
func Resolve(ctx context.Context, l contract.Ledger, ns, key string, r contract.LedgerResolution) (Result, error) {
	if err := checkNSKey(&ns, key); err != nil {
		return Result{}, err
	}
	switch r.As {
	case contract.LedgerCompleted, contract.LedgerFailed, contract.LedgerRetry, "forget":
	default:
		return Result{}, invalid("--as %q: want completed, failed, retry or forget", r.As)
	}
	for _, v := range []*string{&r.Result, &r.Error} {
		if *v == "" {
			*v = "null"
		}
		if err := checkJSON("--result and --error", []byte(*v)); err != nil {
			return Result{}, err
		}
	}
	e, ok, err := l.Resolve(ctx, ns, key, r)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{Status: contract.StatusNotFound, NS: ns, Key: key}, nil
	}
	res := FromEntry(e)
	if r.As == "forget" {
		res.Status = "forgotten"
	}
	return res, nil
}

// checkJSON refuses a result or error that is not JSON, or not UTF-8:
// PostgreSQL's text cannot hold it, and SQLite would replay bytes that
// are not JSON text (docs/ledger.md, "Commands").
func checkJSON(what string, b []byte) error {
	if !json.Valid(b) {
		return invalid("%s is not JSON", what)
	}
	if !utf8.Valid(b) {
		return invalid("%s is not valid UTF-8 at byte %d", what, jsontext.InvalidAt(b))
	}
	return nil
}

func checkNSKey(ns *string, key string) error {
	if *ns == "" {
		*ns = DefaultNS
	}
	if err := contract.CheckKey("key", key); err != nil {
		return err
	}
	return contract.CheckKey("namespace", *ns)
}

func fenced(ns, key string, e contract.LedgerEntry, status string) Result {
	if status == contract.StatusNotFound || status == "" {
		return Result{Status: status, NS: ns, Key: key}
	}
	r := FromEntry(e)
	r.Status = status
	if status == contract.StatusStaleToken {
		r.Result, r.Error = nil, nil // another holder's outcome is not this caller's
	}
	return r
}

// List returns the entries that match f as Results (status: their stored
// state), oldest update first.
func List(ctx context.Context, l contract.Ledger, f contract.LedgerFilter) ([]Result, error) {
	es, err := l.List(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(es))
	for i, e := range es {
		out[i] = FromEntry(e)
	}
	return out, nil
}

// GC deletes the completed and failed keys last updated more than keep
// ago and returns how many (a caller without a choice passes DefaultKeep).
func GC(ctx context.Context, l contract.Ledger, keep time.Duration) (int64, error) {
	if keep < 0 {
		return 0, invalid("keep %s is negative", keep)
	}
	return l.GC(ctx, keep)
}
