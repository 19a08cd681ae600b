package storetest

import (
	"context"
	"fmt"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// RunLedger runs the side-effect ledger's cases (docs/ledger.md) on the
// stores h makes, which must implement contract.Ledger. Leases are short
// and real: the SQLite store judges them by the process's clock, the
// PostgreSQL store by the database's.
func RunLedger(t *testing.T, h Harness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open func(t *testing.T) contract.Ledger)
	}{
		{"ClaimOnce", ledgerClaimOnce},
		{"SameOwner", ledgerSameOwner},
		{"CompleteReplays", ledgerCompleteReplays},
		{"LeaseExpiry", ledgerLeaseExpiry},
		{"HoldAndResolve", ledgerHoldAndResolve},
		{"ResolvePending", ledgerResolvePending},
		{"ForgetPending", ledgerForgetPending},
		{"Mismatch", ledgerMismatch},
		{"FailRetryable", ledgerFailRetryable},
		{"FailPermanent", ledgerFailPermanent},
		{"Heartbeat", ledgerHeartbeat},
		{"Batch", ledgerBatch},
		{"Concurrent", ledgerConcurrent},
		{"ListGC", ledgerListGC},
		{"Keys", ledgerKeys},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opener := h.New(t)
			c.fn(t, func(t *testing.T) contract.Ledger {
				s := opener(t)
				t.Cleanup(func() { s.Close() })
				l, ok := s.(contract.Ledger)
				if !ok {
					t.Fatalf("%T is not a contract.Ledger", s)
				}
				return l
			})
		})
	}
}

var tokenSeq gosync.Mutex
var tokenN int

func newTok() string {
	tokenSeq.Lock()
	defer tokenSeq.Unlock()
	tokenN++
	return fmt.Sprintf("tok-%d", tokenN)
}

func req(key, owner string, ttl time.Duration) contract.ClaimRequest {
	return contract.ClaimRequest{NS: "ns", Key: key, Owner: owner, TTL: ttl, Token: newTok()}
}

func claim1(t *testing.T, l contract.Ledger, r contract.ClaimRequest) contract.ClaimOutcome {
	t.Helper()
	out, err := l.Claim(context.Background(), []contract.ClaimRequest{r})
	if err != nil {
		t.Fatalf("Claim(%s): %v", r.Key, err)
	}
	if len(out) != 1 {
		t.Fatalf("Claim(%s): %d outcomes, want 1", r.Key, len(out))
	}
	return out[0]
}

func wantStatus(t *testing.T, what string, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: status %q, want %q", what, got, want)
	}
}

func ledgerClaimOnce(t *testing.T, open func(t *testing.T) contract.Ledger) {
	l := open(t)
	r := req("k", "", time.Minute)
	o := claim1(t, l, r)
	wantStatus(t, "first claim", o.Status, contract.StatusAcquired)
	if o.Entry.Token != r.Token || o.Entry.Attempt != 1 || o.Previous != "" || o.Entry.ExpiresAt.IsZero() {
		t.Fatalf("first claim: %+v", o)
	}
	o2 := claim1(t, l, req("k", "", time.Minute))
	wantStatus(t, "second claim", o2.Status, contract.StatusInProgress)
	if o2.Entry.Token != r.Token {
		t.Errorf("in_progress names token %q, the holder's is %q", o2.Entry.Token, r.Token)
	}
	// Another namespace is another key.
	r3 := req("k", "", time.Minute)
	r3.NS = "other"
	wantStatus(t, "claim in another ns", claim1(t, l, r3).Status, contract.StatusAcquired)
}

func ledgerSameOwner(t *testing.T, open func(t *testing.T) contract.Ledger) {
	l := open(t)
	first := claim1(t, l, req("k", "worker-1", time.Minute))
	wantStatus(t, "first claim", first.Status, contract.StatusAcquired)
	again := claim1(t, l, req("k", "worker-1", time.Minute))
	wantStatus(t, "same owner again", again.Status, contract.StatusAcquired)
	if again.Entry.Token != first.Entry.Token || again.Previous != contract.PrevReclaimed || again.Entry.Attempt != 1 {
		t.Fatalf("same owner: token %q previous %q attempt %d; want its own token %q, reclaimed, attempt 1",
			again.Entry.Token, again.Previous, again.Entry.Attempt, first.Entry.Token)
	}
	wantStatus(t, "other owner", claim1(t, l, req("k", "worker-2", time.Minute)).Status, contract.StatusInProgress)
}

func ledgerCompleteReplays(t *testing.T, open func(t *testing.T) contract.Ledger) {
	ctx := context.Background()
	l := open(t)
	o := claim1(t, l, req("k", "", time.Minute))
	_, st, err := l.Complete(ctx, "ns", "k", "not-the-token", `{"x":1}`)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "complete with another token", st, contract.StatusStaleToken)
	e, st, err := l.Complete(ctx, "ns", "k", o.Entry.Token, `{"id":"ch_1"}`)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "complete", st, contract.StatusCompleted)
	if e.Result != `{"id":"ch_1"}` {
		t.Errorf("complete stored result %q", e.Result)
	}
	// A complete killed after its commit and run again: the same outcome.
	e, st, err = l.Complete(ctx, "ns", "k", o.Entry.Token, `{"id":"ch_2"}`)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "complete again", st, contract.StatusCompleted)
	if e.Result != `{"id":"ch_1"}` {
		t.Errorf("complete again changed the result to %q", e.Result)
	}
	// A reopened store replays the stored result.
	c := claim1(t, open(t), req("k", "", time.Minute))
	wantStatus(t, "claim after complete", c.Status, contract.StatusCompleted)
	if c.Entry.Result != `{"id":"ch_1"}` {
		t.Errorf("replay result %q", c.Entry.Result)
	}
	_, st, _ = l.Complete(ctx, "ns", "missing", "t", "{}")
	wantStatus(t, "complete of a missing key", st, contract.StatusNotFound)
}

func ledgerLeaseExpiry(t *testing.T, open func(t *testing.T) contract.Ledger) {
	ctx := context.Background()
	l := open(t)
	old := claim1(t, l, req("k", "w1", 200*time.Millisecond))
	time.Sleep(400 * time.Millisecond)
	// The same owner after its lease ended is not given its claim back:
	// nothing knows what it did.
	next := claim1(t, l, req("k", "w1", time.Minute))
	wantStatus(t, "claim after expiry", next.Status, contract.StatusAcquired)
	if next.Previous != contract.PrevExpiredUnknown || next.Entry.Token == old.Entry.Token ||
		next.Entry.Attempt != 2 || next.Entry.Unknown != 1 {
		t.Fatalf("claim after expiry: previous %q token %q (old %q) attempt %d unknown %d; want expired_unknown, a new token, 2, 1",
			next.Previous, next.Entry.Token, old.Entry.Token, next.Entry.Attempt, next.Entry.Unknown)
	}
	if _, st, _ := l.Complete(ctx, "ns", "k", old.Entry.Token, `{}`); st != contract.StatusStaleToken {
		t.Fatalf("old holder's complete: %q, want stale_token", st)
	}
	if _, st, _ := l.Heartbeat(ctx, "ns", "k", old.Entry.Token); st != contract.StatusStaleToken {
		t.Fatalf("old holder's heartbeat: %q, want stale_token", st)
	}
	if _, st, _ := l.Fail(ctx, "ns", "k", old.Entry.Token, contract.LedgerFailure{}); st != contract.StatusStaleToken {
		t.Fatalf("old holder's fail: %q, want stale_token", st)
	}
	e, st, err := l.Complete(ctx, "ns", "k", next.Entry.Token, `{"ok":true}`)
	if err != nil || st != contract.StatusCompleted || e.Unknown != 1 {
		t.Fatalf("new holder's complete: %q %+v %v", st, e, err)
	}
	// A lease that expired with its holder's token unchanged (nobody
	// claimed since) still takes its holder's outcome.
	late := claim1(t, l, req("late", "", 100*time.Millisecond))
	time.Sleep(250 * time.Millisecond)
	if _, st, _ := l.Complete(ctx, "ns", "late", late.Entry.Token, `{}`); st != contract.StatusCompleted {
		t.Fatalf("complete after expiry, nobody claimed since: %q, want completed", st)
	}
}

func ledgerHoldAndResolve(t *testing.T, open func(t *testing.T) contract.Ledger) {
	ctx := context.Background()
	l := open(t)
	old := claim1(t, l, req("k", "", 100*time.Millisecond))
	time.Sleep(250 * time.Millisecond)
	r := req("k", "", time.Minute)
	r.OnExpired = contract.OnExpiredHold
	h := claim1(t, l, r)
	wantStatus(t, "claim with hold after expiry", h.Status, contract.StatusHeld)
	if h.Previous != contract.PrevExpiredUnknown || h.Entry.Unknown != 1 {
		t.Fatalf("held: %+v", h)
	}
	// Held stays held, whatever the next claimer's policy.
	wantStatus(t, "claim while held", claim1(t, l, req("k", "", time.Minute)).Status, contract.StatusHeld)
	if _, st, _ := l.Complete(ctx, "ns", "k", old.Entry.Token, `{}`); st != contract.StatusStaleToken {
		t.Fatalf("complete while held: %q, want stale_token", st)
	}
	if _, ok, err := l.Resolve(ctx, "ns", "k", contract.LedgerResolution{As: contract.LedgerRetry}); err != nil || !ok {
		t.Fatalf("resolve: %v %v", ok, err)
	}
	a := claim1(t, l, req("k", "", time.Minute))
	wantStatus(t, "claim after resolve retry", a.Status, contract.StatusAcquired)
	if a.Previous != contract.PrevResolved || a.Entry.Attempt != 2 {
		t.Fatalf("after resolve: %+v", a)
	}
	// An operator completes a key a holder still has: the holder is fenced.
	if _, _, err := l.Resolve(ctx, "ns", "k", contract.LedgerResolution{As: contract.LedgerCompleted, Result: `{"by":"op"}`}); err != nil {
		t.Fatal(err)
	}
	if _, st, _ := l.Complete(ctx, "ns", "k", a.Entry.Token, `{}`); st != contract.StatusStaleToken {
		t.Fatalf("holder's complete after resolve: %q", st)
	}
	c := claim1(t, l, req("k", "", time.Minute))
	if c.Status != contract.StatusCompleted || c.Entry.Result != `{"by":"op"}` {
		t.Fatalf("after resolve completed: %+v", c)
	}
	if _, ok, _ := l.Resolve(ctx, "ns", "k", contract.LedgerResolution{As: "forget"}); !ok {
		t.Fatal("forget: key not found")
	}
	if _, ok, _ := l.Get(ctx, "ns", "k"); ok {
		t.Fatal("forgotten key still there")
	}
	if _, ok, _ := l.Resolve(ctx, "ns", "nope", contract.LedgerResolution{As: "retry"}); ok {
		t.Fatal("resolve of a missing key reported found")
	}
}

// An operator's resolve of a pending key ends its lease without the
// holder's outcome: a holder still live may do its side effect after the
// operator looked downstream, and the next holder does it again. The
// lease is counted in unknown_leases, as a lease that expired is, so the
// possible double is visible (docs/ledger.md, "Statuses").
func ledgerResolvePending(t *testing.T, open func(t *testing.T) contract.Ledger) {
	ctx := context.Background()
	l := open(t)
	live := claim1(t, l, req("live", "", time.Minute))
	if _, ok, err := l.Resolve(ctx, "ns", "live", contract.LedgerResolution{As: contract.LedgerRetry}); err != nil || !ok {
		t.Fatalf("resolve: %v %v", ok, err)
	}
	next := claim1(t, l, req("live", "", time.Minute))
	wantStatus(t, "claim after resolving a live lease", next.Status, contract.StatusAcquired)
	if next.Previous != contract.PrevResolved || next.Entry.Unknown != 1 {
		t.Errorf("claim after resolving a live lease: previous %q, unknown_leases %d; want resolved, 1", next.Previous, next.Entry.Unknown)
	}
	if _, st, _ := l.Complete(ctx, "ns", "live", live.Entry.Token, `{}`); st != contract.StatusStaleToken {
		t.Errorf("the resolved holder's complete: %q, want stale_token", st)
	}
	// Resolved as completed, the count stays on the key for list and get.
	if _, _, err := l.Resolve(ctx, "ns", "live", contract.LedgerResolution{As: contract.LedgerCompleted, Result: `{}`}); err != nil {
		t.Fatal(err)
	}
	if e, _, _ := l.Get(ctx, "ns", "live"); e.Unknown != 2 {
		t.Errorf("unknown_leases after two resolved leases: %d, want 2", e.Unknown)
	}
	// A key resolved when it was no longer pending counts nothing more.
	if _, _, err := l.Resolve(ctx, "ns", "live", contract.LedgerResolution{As: contract.LedgerRetry}); err != nil {
		t.Fatal(err)
	}
	if e, _, _ := l.Get(ctx, "ns", "live"); e.Unknown != 2 {
		t.Errorf("unknown_leases after resolving a completed key: %d, want 2", e.Unknown)
	}
}

// Forgetting a pending key would delete the lease with its count: the
// next claim would be a first one (acquired, no previous, unknown_leases
// 0) while the holder, live or slower than its lease, may still do the
// side effect, a double nothing reports. Resolve refuses it, as invalid,
// and leaves the key as it was; a key no longer pending is forgotten
// (docs/ledger.md, "Commands").
func ledgerForgetPending(t *testing.T, open func(t *testing.T) contract.Ledger) {
	ctx := context.Background()
	l := open(t)
	for _, c := range []struct {
		key        string
		ttl, sleep time.Duration
	}{{"live", time.Minute, 0}, {"expired", 50 * time.Millisecond, 150 * time.Millisecond}} {
		held := claim1(t, l, req(c.key, "", c.ttl))
		time.Sleep(c.sleep)
		_, _, err := l.Resolve(ctx, "ns", c.key, contract.LedgerResolution{As: "forget"})
		if contract.ClassOf(err) != contract.Invalid {
			t.Errorf("forget of a %s pending key: error %v (class %v), want invalid", c.key, err, contract.ClassOf(err))
		}
		if e, ok, _ := l.Get(ctx, "ns", c.key); !ok || e.Status != contract.LedgerPending || e.Token != held.Entry.Token {
			t.Fatalf("after the refused forget of the %s key: found %v, %+v; want it pending with its holder's token", c.key, ok, e)
		}
		next := claim1(t, l, req(c.key, "", time.Minute))
		if next.Status == contract.StatusAcquired && next.Previous == "" {
			t.Errorf("claim after forgetting the %s pending key: acquired as a first claim (unknown_leases %d) while its holder may still act",
				c.key, next.Entry.Unknown)
		}
	}
	// Resolved first (the lease counted), the key is forgotten.
	if _, _, err := l.Resolve(ctx, "ns", "live", contract.LedgerResolution{As: contract.LedgerRetry}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := l.Resolve(ctx, "ns", "live", contract.LedgerResolution{As: "forget"}); err != nil || !ok {
		t.Fatalf("forget of a resolved key: %v %v", ok, err)
	}
	if _, ok, _ := l.Get(ctx, "ns", "live"); ok {
		t.Fatal("forgotten key still there")
	}
}

func ledgerMismatch(t *testing.T, open func(t *testing.T) contract.Ledger) {
	l := open(t)
	r := req("k", "", time.Minute)
	r.Fingerprint = "aaaa"
	claim1(t, l, r)
	r2 := req("k", "", time.Minute)
	r2.Fingerprint = "bbbb"
	o := claim1(t, l, r2)
	wantStatus(t, "claim with other params", o.Status, contract.StatusMismatch)
	if o.Expected != "aaaa" {
		t.Errorf("mismatch expected %q, want aaaa", o.Expected)
	}
	r3 := req("k", "", time.Minute)
	r3.Fingerprint = "aaaa"
	wantStatus(t, "claim with the same params", claim1(t, l, r3).Status, contract.StatusInProgress)
	// No fingerprint given: no check.
	wantStatus(t, "claim without params", claim1(t, l, req("k", "", time.Minute)).Status, contract.StatusInProgress)
}

func ledgerFailRetryable(t *testing.T, open func(t *testing.T) contract.Ledger) {
	ctx := context.Background()
	l := open(t)
	o := claim1(t, l, req("k", "", time.Minute))
	_, st, err := l.Fail(ctx, "ns", "k", o.Entry.Token, contract.LedgerFailure{Retryable: true, NotBefore: 300 * time.Millisecond, Error: `{"http":503}`})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "fail retryable", st, contract.StatusRetryLater)
	early := claim1(t, l, req("k", "", time.Minute))
	wantStatus(t, "claim before not_before", early.Status, contract.StatusRetryLater)
	if early.Entry.Error != `{"http":503}` || early.Entry.NotBefore.IsZero() {
		t.Errorf("retry_later: %+v", early.Entry)
	}
	time.Sleep(450 * time.Millisecond)
	a := claim1(t, l, req("k", "", time.Minute))
	wantStatus(t, "claim after not_before", a.Status, contract.StatusAcquired)
	if a.Previous != contract.PrevFailedRetry || a.Entry.Attempt != 2 || a.Entry.Unknown != 0 {
		t.Fatalf("after retryable fail: %+v", a)
	}
}

func ledgerFailPermanent(t *testing.T, open func(t *testing.T) contract.Ledger) {
	ctx := context.Background()
	l := open(t)
	o := claim1(t, l, req("k", "", time.Minute))
	_, st, err := l.Fail(ctx, "ns", "k", o.Entry.Token, contract.LedgerFailure{Error: `{"http":402}`})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "fail permanent", st, contract.StatusFailed)
	_, st, _ = l.Fail(ctx, "ns", "k", o.Entry.Token, contract.LedgerFailure{Error: `{"http":402}`})
	wantStatus(t, "fail again with its token", st, contract.StatusFailed)
	f := claim1(t, l, req("k", "", time.Minute))
	wantStatus(t, "claim after permanent fail", f.Status, contract.StatusFailed)
	if f.Entry.Error != `{"http":402}` {
		t.Errorf("stored error %q", f.Entry.Error)
	}
}

func ledgerHeartbeat(t *testing.T, open func(t *testing.T) contract.Ledger) {
	ctx := context.Background()
	l := open(t)
	o := claim1(t, l, req("k", "", 400*time.Millisecond))
	for range 3 {
		time.Sleep(200 * time.Millisecond)
		e, st, err := l.Heartbeat(ctx, "ns", "k", o.Entry.Token)
		if err != nil || st != contract.StatusOK {
			t.Fatalf("heartbeat: %q %v", st, err)
		}
		if !e.ExpiresAt.After(o.Entry.ExpiresAt) {
			t.Fatalf("heartbeat left expires_at at %v (claimed %v)", e.ExpiresAt, o.Entry.ExpiresAt)
		}
	}
	// 600 ms after the claim, past its first lease: renewed, so held.
	wantStatus(t, "claim while renewed", claim1(t, l, req("k", "", time.Minute)).Status, contract.StatusInProgress)
	if _, st, _ := l.Heartbeat(ctx, "ns", "k", "other"); st != contract.StatusStaleToken {
		t.Fatalf("heartbeat with another token: %q", st)
	}
}

func ledgerBatch(t *testing.T, open func(t *testing.T) contract.Ledger) {
	l := open(t)
	claim1(t, l, req("k-0007", "", time.Minute)) // already held
	var reqs []contract.ClaimRequest
	for i := range 1200 { // more than one transaction's worth
		reqs = append(reqs, req(fmt.Sprintf("k-%04d", 1199-i), "", time.Minute))
	}
	reqs = append(reqs, req("k-0001", "", time.Minute)) // twice in one batch
	out, err := l.Claim(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(reqs) {
		t.Fatalf("%d outcomes for %d claims", len(out), len(reqs))
	}
	for i, o := range out {
		want := contract.StatusAcquired
		if reqs[i].Key == "k-0007" || i == len(reqs)-1 {
			want = contract.StatusInProgress
		}
		if o.Entry.Key != reqs[i].Key || o.Status != want {
			t.Fatalf("outcome %d: key %q status %q; want key %q status %q", i, o.Entry.Key, o.Status, reqs[i].Key, want)
		}
	}
}

// ledgerConcurrent: claimers on separate opens of one state, all at once,
// on one key: exactly one acquires.
func ledgerConcurrent(t *testing.T, open func(t *testing.T) contract.Ledger) {
	const n = 8
	ls := make([]contract.Ledger, n)
	for i := range ls {
		ls[i] = open(t)
	}
	for round := range 5 {
		key := fmt.Sprintf("race-%d", round)
		var wg gosync.WaitGroup
		statuses := make([]string, n*2)
		errs := make([]error, n*2)
		for i := range n * 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := ls[i%n].Claim(context.Background(), []contract.ClaimRequest{req(key, "", time.Minute)})
				errs[i] = err
				if err == nil {
					statuses[i] = out[0].Status
				}
			}()
		}
		wg.Wait()
		acquired := 0
		for i := range statuses {
			if errs[i] != nil {
				t.Fatalf("round %d claimer %d: %v", round, i, errs[i])
			}
			if statuses[i] == contract.StatusAcquired {
				acquired++
			} else if statuses[i] != contract.StatusInProgress {
				t.Fatalf("round %d claimer %d: %q", round, i, statuses[i])
			}
		}
		if acquired != 1 {
			t.Fatalf("round %d: %d claimers acquired %s, want exactly 1 (%v)", round, acquired, key, statuses)
		}
	}
}

func ledgerListGC(t *testing.T, open func(t *testing.T) contract.Ledger) {
	ctx := context.Background()
	l := open(t)
	done := claim1(t, l, req("done", "", time.Minute))
	l.Complete(ctx, "ns", "done", done.Entry.Token, `{}`)
	bad := claim1(t, l, req("bad", "", time.Minute))
	l.Fail(ctx, "ns", "bad", bad.Entry.Token, contract.LedgerFailure{Error: `"no"`})
	claim1(t, l, req("open", "", time.Minute))
	all, err := l.List(ctx, contract.LedgerFilter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("List: %d entries, %v", len(all), err)
	}
	pending, _ := l.List(ctx, contract.LedgerFilter{Statuses: []string{contract.LedgerPending}})
	if len(pending) != 1 || pending[0].Key != "open" {
		t.Fatalf("List pending: %+v", pending)
	}
	if old, _ := l.List(ctx, contract.LedgerFilter{Older: time.Hour}); len(old) != 0 {
		t.Fatalf("List older than 1h: %d entries", len(old))
	}
	if n, err := l.GC(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("GC keep 1h: %d, %v", n, err)
	}
	time.Sleep(20 * time.Millisecond)
	n, err := l.GC(ctx, time.Millisecond)
	if err != nil || n != 2 {
		t.Fatalf("GC: removed %d (%v), want the completed and the failed key", n, err)
	}
	if _, ok, _ := l.Get(ctx, "ns", "open"); !ok {
		t.Fatal("GC removed an open key")
	}
}

// ledgerKeys: a key of 255 bytes of any UTF-8 is kept exactly.
func ledgerKeys(t *testing.T, open func(t *testing.T) contract.Ledger) {
	ctx := context.Background()
	l := open(t)
	long := strings.Repeat("é", 127) + "x" // 255 bytes
	for _, k := range []string{long, "日本語/キー", "a b\tc\n'\"%_", "🙂"} {
		if err := contract.CheckKey("key", k); err != nil {
			t.Fatalf("CheckKey(%q): %v", k, err)
		}
		o := claim1(t, l, req(k, "", time.Minute))
		wantStatus(t, "claim "+k, o.Status, contract.StatusAcquired)
		e, ok, err := l.Get(ctx, "ns", k)
		if err != nil || !ok || e.Key != k {
			t.Fatalf("Get(%q): %q %v %v", k, e.Key, ok, err)
		}
	}
	if _, ok, _ := l.Get(ctx, "ns", "日本語"); ok {
		t.Fatal("a prefix of a key found its entry")
	}
}
