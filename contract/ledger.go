package contract

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Ledger is the side-effect ledger (docs/ledger.md): per namespace and key
// one unit of work, claimed atomically before its side effect and
// completed or failed after it, kept on the same state store as the syncs.
// The SQLite state file and the PostgreSQL state implement it, and
// checkpoint/storetest's RunLedger is the suite both pass.
//
// Every decision a claim takes from the entry it finds is Decide's, so
// the stores only differ in how they lock: a store reads the entry, calls
// Decide with its clock (PostgreSQL: the database's) and writes the entry
// Decide returns in one locked read-modify-write. Business outcomes
// (in_progress, mismatch, stale_token...) are values, never errors; an
// error is a store that cannot be reached or refuses (exit 3 or 1).
type Ledger interface {
	// Claim claims one key (ClaimRequest) and returns what the claim saw
	// and did; a store claims a batch in few transactions.
	Claim(ctx context.Context, reqs []ClaimRequest) ([]ClaimOutcome, error)
	// Complete records the result of the claim holding token: status
	// completed, or stale_token when token does not hold the key.
	Complete(ctx context.Context, ns, key, token, result string) (LedgerEntry, string, error)
	// Fail records a failed attempt of the claim holding token
	// (LedgerFailure); it returns the status and the entry.
	Fail(ctx context.Context, ns, key, token string, f LedgerFailure) (LedgerEntry, string, error)
	// Heartbeat extends the lease of the claim holding token by its TTL.
	Heartbeat(ctx context.Context, ns, key, token string) (LedgerEntry, string, error)
	// Get returns the entry of a key, ok false when there is none.
	Get(ctx context.Context, ns, key string) (e LedgerEntry, ok bool, err error)
	// List returns the entries that match f, oldest update first.
	List(ctx context.Context, f LedgerFilter) ([]LedgerEntry, error)
	// Resolve sets the outcome of a key by an operator (LedgerResolution),
	// whatever holds it: a holder's token goes stale.
	Resolve(ctx context.Context, ns, key string, r LedgerResolution) (LedgerEntry, bool, error)
	// GC deletes the completed and failed entries last updated more than
	// keep ago and returns how many it deleted; open entries stay.
	GC(ctx context.Context, keep time.Duration) (int64, error)
}

// Stored states of a ledger entry.
const (
	LedgerPending   = "pending"   // claimed, lease running or expired
	LedgerCompleted = "completed" // the side effect is done; result stored
	LedgerFailed    = "failed"    // failed for good; error stored
	LedgerRetry     = "retry"     // failed, may be claimed again from not_before
	LedgerHeld      = "held"      // a lease expired without outcome; an operator resolves it
)

// Claim outcomes and the statuses of complete, fail and heartbeat
// (docs/ledger.md, "Statuses").
const (
	StatusAcquired   = "acquired"
	StatusCompleted  = "completed"
	StatusInProgress = "in_progress"
	StatusMismatch   = "mismatch"
	StatusFailed     = "failed"
	StatusRetryLater = "retry_later"
	StatusHeld       = "held"
	StatusStaleToken = "stale_token"
	StatusNotFound   = "not_found"
	StatusOK         = "ok"
)

// Values of ClaimOutcome.Previous: why an acquired claim is not the first.
const (
	PrevExpiredUnknown = "expired_unknown" // a lease ended without complete or fail
	PrevFailedRetry    = "failed_retryable"
	PrevResolved       = "resolved"  // an operator set the key to retry
	PrevReclaimed      = "reclaimed" // the same owner claimed its own claim again
)

// Policies for a claim that finds an expired lease.
const (
	OnExpiredRetry = "retry" // acquire, saying previous: expired_unknown
	OnExpiredHold  = "hold"  // hold the key for an operator's resolve
)

// MaxKeyBytes bounds a key and a namespace.
const MaxKeyBytes = 255

// CheckKey reports whether s can be a key or namespace (what names it):
// 1 to 255 bytes of valid UTF-8 without NUL, which PostgreSQL's text
// cannot hold (docs/ledger.md, "Choosing a key").
func CheckKey(what, s string) error {
	switch {
	case s == "":
		return &Error{Class: Invalid, Msg: what + " is empty"}
	case len(s) > MaxKeyBytes:
		return &Error{Class: Invalid, Msg: fmt.Sprintf("%s is %d bytes, at most %d", what, len(s), MaxKeyBytes)}
	case !utf8.ValidString(s):
		return &Error{Class: Invalid, Msg: what + " is not valid UTF-8"}
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return &Error{Class: Invalid, Msg: fmt.Sprintf("%s has a NUL byte at %d", what, i)}
		}
	}
	return nil
}

// ClaimRequest is one claim.
type ClaimRequest struct {
	NS, Key string
	// Fingerprint of the unit's parameters ("" none): a claim with another
	// one than the stored is a mismatch.
	Fingerprint string
	Owner       string        // "" none; the same owner gets its claim back
	TTL         time.Duration // the lease
	OnExpired   string        // OnExpiredRetry ("" too) or OnExpiredHold
	Token       string        // the token a new claim gets (the caller makes it)
}

// LedgerEntry is a key as stored.
type LedgerEntry struct {
	NS          string
	Key         string
	Status      string // Ledger* state
	Fingerprint string
	Token       string // of the current or last claim; "" after resolve
	Owner       string
	Attempt     int64
	TTL         time.Duration
	ExpiresAt   time.Time // end of the lease (pending)
	NotBefore   time.Time // retry: not claimed again before
	Result      string    // JSON, completed
	Error       string    // JSON, failed or retry
	// Unknown counts the leases that ended without complete or fail: each
	// is a side effect that may have happened (docs/ledger.md).
	Unknown   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ClaimOutcome is what one claim saw and did.
type ClaimOutcome struct {
	Status   string // Status*
	Previous string // Prev* on an acquired claim, "" for a first one
	// Expected is the stored fingerprint on a mismatch.
	Expected string
	Entry    LedgerEntry
}

// LedgerFailure is a failed attempt: retryable (claimable again after
// NotBefore) or permanent.
type LedgerFailure struct {
	Retryable bool
	NotBefore time.Duration
	Error     string // JSON
}

// LedgerResolution is an operator's outcome for a key: As completed
// (Result), failed (Error), retry (claimable now) or forget (deleted).
type LedgerResolution struct {
	As     string
	Result string
	Error  string
}

// LedgerFilter selects entries for List.
type LedgerFilter struct {
	NS       string        // "" every namespace
	Statuses []string      // stored states; none: every one
	Older    time.Duration // last updated more than this ago (0: any)
	Limit    int           // <= 0: no limit
}

// Decide is the claim's decision on the entry it found (nil: none), at
// now: the outcome, and the entry to store (nil: unchanged). Both stores
// call it inside their locked read-modify-write (docs/ledger.md).
func Decide(cur *LedgerEntry, r ClaimRequest, now time.Time) (ClaimOutcome, *LedgerEntry) {
	acquire := func(prev string, attempt, unknown int64, created time.Time) (ClaimOutcome, *LedgerEntry) {
		fp := r.Fingerprint
		if fp == "" && cur != nil {
			fp = cur.Fingerprint
		}
		e := &LedgerEntry{NS: r.NS, Key: r.Key, Status: LedgerPending, Fingerprint: fp, Token: r.Token,
			Owner: r.Owner, Attempt: attempt, TTL: r.TTL, ExpiresAt: now.Add(r.TTL), Unknown: unknown,
			CreatedAt: created, UpdatedAt: now}
		return ClaimOutcome{Status: StatusAcquired, Previous: prev, Entry: *e}, e
	}
	if cur == nil {
		return acquire("", 1, 0, now)
	}
	out := ClaimOutcome{Entry: *cur}
	if r.Fingerprint != "" && cur.Fingerprint != "" && !strings.EqualFold(r.Fingerprint, cur.Fingerprint) { // hex, in either case (docs/ledger.md, "Fingerprints")
		out.Status, out.Expected = StatusMismatch, cur.Fingerprint
		return out, nil
	}
	switch cur.Status {
	case LedgerCompleted:
		out.Status = StatusCompleted
	case LedgerFailed:
		out.Status = StatusFailed
	case LedgerHeld:
		out.Status, out.Previous = StatusHeld, PrevExpiredUnknown
	case LedgerRetry:
		if now.Before(cur.NotBefore) {
			out.Status = StatusRetryLater
			return out, nil
		}
		prev := PrevFailedRetry
		if cur.Token == "" {
			prev = PrevResolved
		}
		return acquire(prev, cur.Attempt+1, cur.Unknown, cur.CreatedAt)
	case LedgerPending:
		if now.Before(cur.ExpiresAt) {
			if r.Owner == "" || r.Owner != cur.Owner {
				out.Status = StatusInProgress
				return out, nil
			}
			// The same owner again (n8n retrying its node): its own
			// claim back, the same token, the lease renewed.
			e := *cur
			e.TTL, e.ExpiresAt, e.UpdatedAt = r.TTL, now.Add(r.TTL), now
			return ClaimOutcome{Status: StatusAcquired, Previous: PrevReclaimed, Entry: e}, &e
		}
		// The lease ended without an outcome: the side effect may or may
		// not have happened, and nothing here can know which.
		if r.OnExpired == OnExpiredHold {
			e := *cur
			e.Status, e.Token, e.Unknown, e.UpdatedAt = LedgerHeld, "", cur.Unknown+1, now
			return ClaimOutcome{Status: StatusHeld, Previous: PrevExpiredUnknown, Entry: e}, &e
		}
		return acquire(PrevExpiredUnknown, cur.Attempt+1, cur.Unknown+1, cur.CreatedAt)
	default:
		out.Status = StatusFailed
	}
	return out, nil
}

// Fenced applies an outcome of the holder of token to cur at now (op:
// complete, fail or heartbeat): the status, and the entry to store (nil:
// unchanged). A token that does not hold the key is stale_token, never
// applied; a complete (or fail) repeated with the token that recorded it
// is the stored outcome again (one killed after its commit, retried).
func Fenced(cur *LedgerEntry, op, token string, result string, f LedgerFailure, now time.Time) (string, *LedgerEntry) {
	if cur == nil {
		return StatusNotFound, nil
	}
	if token == "" || cur.Token != token {
		return StatusStaleToken, nil
	}
	switch {
	case cur.Status == LedgerCompleted && op == "complete":
		return StatusCompleted, nil
	case cur.Status == LedgerFailed && op == "fail":
		return StatusFailed, nil
	case cur.Status == LedgerRetry && op == "fail":
		return StatusRetryLater, nil
	case cur.Status != LedgerPending:
		return StatusStaleToken, nil
	}
	e := *cur
	e.UpdatedAt = now
	switch op {
	case "complete":
		e.Status, e.Result, e.Error = LedgerCompleted, result, ""
		return StatusCompleted, &e
	case "fail":
		e.Error = f.Error
		if f.Retryable {
			e.Status, e.NotBefore = LedgerRetry, now.Add(f.NotBefore)
			return StatusRetryLater, &e
		}
		e.Status = LedgerFailed
		return StatusFailed, &e
	}
	e.ExpiresAt = now.Add(e.TTL)
	return StatusOK, &e
}

// Resolved applies an operator's resolution to cur at now: the entry to
// store (nil with forget: delete it). A pending key's lease ends here
// without its holder's outcome, and is counted in Unknown: a holder still
// live may do its side effect after the operator looked downstream
// (docs/ledger.md, "Statuses"). Forgetting a pending key is refused
// (Invalid, nothing changed): deleted with its lease, the next claim
// would be a first one, its possible double counted nowhere.
func Resolved(cur LedgerEntry, r LedgerResolution, now time.Time) (*LedgerEntry, error) {
	if r.As == "forget" && cur.Status == LedgerPending {
		return nil, &Error{Class: Invalid, Msg: fmt.Sprintf("key %q of namespace %q is pending: its holder may still do the side effect, "+
			"and forgotten, the next claim would acquire it as a new key without expired_unknown; resolve it --as retry, completed or failed first", cur.Key, cur.NS)}
	}
	e := cur
	e.Token, e.UpdatedAt = "", now
	if cur.Status == LedgerPending {
		e.Unknown++
	}
	switch r.As {
	case LedgerCompleted:
		e.Status, e.Result, e.Error = LedgerCompleted, r.Result, ""
	case LedgerFailed:
		e.Status, e.Error = LedgerFailed, r.Error
	case LedgerRetry:
		e.Status, e.NotBefore = LedgerRetry, now
	default: // forget
		return nil, nil
	}
	return &e, nil
}
