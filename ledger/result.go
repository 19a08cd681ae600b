package ledger

import (
	"encoding/json"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// Result is the JSON object of every ledger call (docs/ledger.md,
// "Statuses"): status says what happened; the other fields are there when
// they mean something for it.
type Result struct {
	Status string `json:"status"`
	NS     string `json:"ns"`
	Key    string `json:"key"`
	// State is the key's stored state after the call (pending, completed,
	// failed, retry, held).
	State string `json:"state,omitempty"`
	// Token is the fencing token of an acquired claim, for complete, fail
	// and heartbeat; never shown to anyone else.
	Token         string `json:"token,omitempty"`
	Attempt       int64  `json:"attempt,omitempty"`
	DownstreamKey string `json:"downstream_key,omitempty"`
	// Previous says why an acquired claim is not the key's first:
	// expired_unknown (the side effect may have happened),
	// failed_retryable, resolved, reclaimed.
	Previous string `json:"previous,omitempty"`
	// UnknownLeases counts the leases of the key that ended without an
	// outcome: each a side effect that may have happened.
	UnknownLeases int64           `json:"unknown_leases,omitempty"`
	ExpiresAt     *time.Time      `json:"expires_at,omitempty"`
	NotBefore     *time.Time      `json:"not_before,omitempty"`
	Owner         string          `json:"owner,omitempty"`
	Fingerprint   string          `json:"fingerprint,omitempty"`
	Expected      string          `json:"expected_fingerprint,omitempty"` // mismatch: the stored one
	Result        json.RawMessage `json:"result,omitempty"`
	Error         json.RawMessage `json:"error,omitempty"`
	UpdatedAt     *time.Time      `json:"updated_at,omitempty"`
	// Message is a batch line's error (status invalid).
	Message string `json:"message,omitempty"`
	Line    int    `json:"line,omitempty"`
}

// FromOutcome is a claim's Result.
func FromOutcome(o contract.ClaimOutcome) Result {
	r := FromEntry(o.Entry)
	r.Status, r.Previous = o.Status, o.Previous
	if o.Status == contract.StatusAcquired {
		// Only the claimer gets the token: it fences the holder.
		r.Token = o.Entry.Token
	}
	if o.Status == contract.StatusMismatch {
		r.Expected = o.Entry.Fingerprint
		r.Fingerprint = ""
	}
	return r
}

// FromEntry is a stored entry's Result (status: its state), without its
// token.
func FromEntry(e contract.LedgerEntry) Result {
	r := Result{Status: e.Status, NS: e.NS, Key: e.Key, State: e.Status, Attempt: e.Attempt,
		DownstreamKey: DownstreamKey(e.NS, e.Key), UnknownLeases: e.Unknown, Owner: e.Owner,
		Fingerprint: e.Fingerprint, UpdatedAt: stamp(e.UpdatedAt)}
	switch e.Status {
	case contract.LedgerPending:
		r.ExpiresAt = stamp(e.ExpiresAt)
	case contract.LedgerRetry:
		r.NotBefore = stamp(e.NotBefore)
		r.Error = raw(e.Error)
	case contract.LedgerCompleted:
		r.Result = raw(e.Result)
	case contract.LedgerFailed, contract.LedgerHeld:
		r.Error = raw(e.Error)
	}
	return r
}

func stamp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}
