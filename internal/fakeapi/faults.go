package fakeapi

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Fault kinds, the values of Faults.Kinds. Each replaces the response of one
// list request; none changes the data.
const (
	// Fault429Seconds is 429 Too Many Requests with "Retry-After: 1".
	Fault429Seconds = "429-seconds"
	// Fault429Date is 429 with Retry-After as an HTTP date 1 to 2 seconds ahead.
	Fault429Date = "429-date"
	// Fault429Past is 429 with Retry-After as an HTTP date an hour in the past.
	Fault429Past = "429-past"
	// Fault429Garbage is 429 with the unparseable "Retry-After: soon".
	Fault429Garbage = "429-garbage"
	// Fault500 is 500 Internal Server Error with a JSON error body.
	Fault500 = "500"
	// Fault502 is 502 Bad Gateway with a JSON error body.
	Fault502 = "502"
	// Fault503 is 503 Service Unavailable with a JSON error body.
	Fault503 = "503"
	// Fault504 is 504 Gateway Timeout with a JSON error body.
	Fault504 = "504"
	// FaultReset closes the connection without a response, with an RST
	// (SO_LINGER 0) where the connection is TCP. Go's http.Transport may
	// silently retry an idempotent request that hits it on a reused
	// connection, so a test that must see it uses Rate 1 or no keep-alives.
	FaultReset = "reset"
	// FaultTruncated sends 200 with the real page's Content-Length but only
	// the first half of its JSON body, then closes the connection.
	FaultTruncated = "truncated"
	// FaultErrorPayload is 200 with {"error":{"message":"internal"}} and no data.
	FaultErrorPayload = "error-payload"
	// FaultSlow waits Faults.SlowDelay (cut short when the request is
	// cancelled), then serves the normal response.
	FaultSlow = "slow"
	// FaultHTML is 503 with a text/html maintenance page.
	FaultHTML = "html"
)

// faultKinds is every kind, in the order FaultKinds returns them.
var faultKinds = []string{
	Fault429Seconds, Fault429Date, Fault429Past, Fault429Garbage,
	Fault500, Fault502, Fault503, Fault504,
	FaultReset, FaultTruncated, FaultErrorPayload, FaultSlow, FaultHTML,
}

// FaultKinds returns every fault kind, the default of Faults.Kinds.
func FaultKinds() []string { return slices.Clone(faultKinds) }

// DefaultSlowDelay is Faults.SlowDelay's default.
const DefaultSlowDelay = 3 * time.Second

// Faults configures fault injection (chaos) on the list routes; /redirect
// and unknown paths are never faulted. The zero value injects none.
type Faults struct {
	// Rate is the probability, 0 to 1, that a list request gets a fault.
	Rate float64
	// Kinds are the kinds to choose from, uniformly. Defaults to FaultKinds().
	Kinds []string
	// Seed fixes the sequence of decisions: the n-th list request after
	// New or SetFaults gets the same fault (or none) on every run.
	Seed int64
	// SlowDelay is how long FaultSlow waits. Defaults to DefaultSlowDelay.
	SlowDelay time.Duration
	// MaxConsecutive, when > 0, caps faults in a row: the request after that
	// many consecutive faults is served normally, so a client retrying more
	// than MaxConsecutive times always gets through. Defaults to no cap.
	MaxConsecutive int
	// Limit, when > 0, stops injecting after that many faults in total
	// (Rate 1 with Limit 2 fails exactly the first two requests). Defaults
	// to no limit.
	Limit int
}

// Validate returns an error naming the first problem: a Rate outside 0..1,
// an unknown kind or a negative setting.
func (f Faults) Validate() error {
	if f.Rate < 0 || f.Rate > 1 {
		return fmt.Errorf("fakeapi: fault rate %v is not between 0 and 1", f.Rate)
	}
	for _, k := range f.Kinds {
		if !slices.Contains(faultKinds, k) {
			return fmt.Errorf("fakeapi: unknown fault kind %q (known: %v)", k, faultKinds)
		}
	}
	if f.SlowDelay < 0 || f.MaxConsecutive < 0 || f.Limit < 0 {
		return errors.New("fakeapi: SlowDelay, MaxConsecutive and Limit must not be negative")
	}
	return nil
}

// faultInjector draws the deterministic fault sequence.
type faultInjector struct {
	mu          sync.Mutex
	cfg         Faults
	rng         *rand.Rand
	consecutive int
	injected    int
}

// SetFaults replaces the fault configuration and restarts its sequence from
// f.Seed; requests already in progress are unaffected. It panics when
// f.Validate fails, as that is a bug in the test.
func (a *API) SetFaults(f Faults) {
	if err := f.Validate(); err != nil {
		panic(err)
	}
	f.Kinds = slices.Clone(f.Kinds)
	if len(f.Kinds) == 0 {
		f.Kinds = FaultKinds()
	}
	if f.SlowDelay == 0 {
		f.SlowDelay = DefaultSlowDelay
	}
	fi := &a.faults
	fi.mu.Lock()
	defer fi.mu.Unlock()
	fi.cfg = f
	fi.rng = rand.New(rand.NewPCG(uint64(f.Seed), 0xfa17))
	fi.consecutive, fi.injected = 0, 0
}

// pick decides whether the next list request gets a fault, and which.
func (fi *faultInjector) pick() (kind string, slow time.Duration, ok bool) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	c := fi.cfg
	if c.Rate <= 0 || (c.Limit > 0 && fi.injected >= c.Limit) {
		return "", 0, false
	}
	// Always draw both numbers so the sequence depends only on the seed.
	x, k := fi.rng.Float64(), fi.rng.IntN(len(c.Kinds))
	if x >= c.Rate || (c.MaxConsecutive > 0 && fi.consecutive >= c.MaxConsecutive) {
		fi.consecutive = 0
		return "", 0, false
	}
	fi.consecutive++
	fi.injected++
	return c.Kinds[k], c.SlowDelay, true
}
