package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"
)

// sideEffects is a fake API whose calls are side effects (a charge, an
// email), counted per unit. A unit whose API honours the idempotency key
// applies a key once and answers its stored response after; one whose API
// does not applies every call. Some calls fail before applying: 503
// (retryable) at random, 402 (permanent) always for the units in declined.
type sideEffects struct {
	mu       gosync.Mutex
	applied  map[string]int             // unit -> effects applied
	answered map[string]json.RawMessage // idempotency key -> stored response
	honours  func(unit string) bool
	declined map[string]bool
	rng      *rand.Rand
}

func (s *sideEffects) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	unit := strings.TrimPrefix(r.URL.Path, "/effect/")
	idem := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.declined[unit] {
		http.Error(w, `{"error":"card_declined"}`, http.StatusPaymentRequired)
		return
	}
	if s.honours(unit) {
		if resp, ok := s.answered[idem]; ok {
			w.Write(resp)
			return
		}
	}
	if s.rng.IntN(5) == 0 {
		http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	s.applied[unit]++
	resp := json.RawMessage(fmt.Sprintf(`{"unit":%q,"effect":%d}`, unit, s.applied[unit]))
	if s.honours(unit) {
		s.answered[idem] = resp
	}
	w.Write(resp)
}

// keyKilled runs `idemsync key ARGS` and, when kill > 0, SIGKILLs it that
// long after its start; ok is false when it was killed (or printed no
// object), and its outcome is then unknown to the caller.
func keyKilled(t *testing.T, dir, state string, kill time.Duration, args ...string) (keyJSON, bool) {
	c := exec.Command(binary, append([]string{"key"}, args...)...)
	c.Dir = dir
	c.Env = append(cleanEnv(), "IDEMSYNC_STATE="+state)
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Error(err)
		return keyJSON{}, false
	}
	if kill > 0 {
		timer := time.AfterFunc(kill, func() { _ = c.Process.Kill() })
		defer timer.Stop()
	}
	err := c.Wait()
	var k keyJSON
	if jerr := json.Unmarshal(out.Bytes(), &k); jerr != nil {
		if err == nil {
			t.Errorf("key %v: exit 0 without a JSON object: %q", args, out.String())
		}
		return k, false
	}
	return k, true
}

// The model test of the ledger under SIGKILL (docs/ledger.md, "What each
// crash leaves"): workers claim units, call a side-effect API with the
// downstream key, and complete or fail them, while a random share of the
// claims and completes are SIGKILLed mid-call and a random share of the
// workers die after the claim or after the side effect (a worker's only
// durable state is the ledger, so a worker that stops is one that died).
// Then, with no more kills, the workers finish. Invariants, per unit:
// where the API honours the key, the effect was applied at most once;
// where it does not, every effect beyond the first is visible as an
// expired lease (unknown_leases), never silent; every unit ends completed
// or failed with its reason. Seeded: IDEMSYNC_LEDGER_SEED=N repeats a
// run's choices (the interleaving of processes is the machine's).
func TestLedgerKillModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("IDEMSYNC_LEDGER_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("IDEMSYNC_LEDGER_SEED=%q: %v", v, err)
		}
		seed = n
	}
	t.Logf("seed %d; reproduce: IDEMSYNC_LEDGER_SEED=%d go test ./e2e -run 'TestLedgerKillModel' -count=1 -v", seed, seed)
	dir := t.TempDir()
	for name, state := range ledgerStates(t, dir) {
		t.Run(name, func(t *testing.T) {
			ledgerKillModel(t, dir, state, seed)
			if t.Failed() {
				t.Logf("reproduce: IDEMSYNC_LEDGER_SEED=%d go test ./e2e -run 'TestLedgerKillModel/%s' -count=1 -v", seed, name)
			}
		})
	}
}

func ledgerKillModel(t *testing.T, dir, state string, seed uint64) {
	const units, workers = 24, 6
	names := make([]string, units)
	declined := map[string]bool{}
	for i := range names {
		names[i] = fmt.Sprintf("u%02d", i)
		if i%8 == 7 {
			declined[names[i]] = true
		}
	}
	fx := &sideEffects{applied: map[string]int{}, answered: map[string]json.RawMessage{}, declined: declined,
		rng:     rand.New(rand.NewPCG(seed, 1)),
		honours: func(unit string) bool { n, _ := strconv.Atoi(unit[1:]); return n%2 == 0 }}
	api := serve(t, fx)
	key(t, dir, state, "get", "warm") // migrate before the workers start

	var mu gosync.Mutex
	done := map[string]string{} // unit -> completed or failed, as a claim saw it
	finished := func() bool { mu.Lock(); defer mu.Unlock(); return len(done) == units }
	kills := map[string]int{}

	// work is one worker's attempt at unit; chaos says whether it may die.
	work := func(rng *rand.Rand, unit string, chaos bool) {
		die := func(p int) bool { return chaos && rng.IntN(100) < p }
		killAfter := func(p int) time.Duration {
			if !die(p) {
				return 0
			}
			return time.Duration(rng.IntN(25)) * time.Millisecond
		}
		count := func(what string) { mu.Lock(); kills[what]++; mu.Unlock() }
		c, ok := keyKilled(t, dir, state, killAfter(15), "claim", unit, "--ns", "model", "--ttl", "1500ms")
		if !ok {
			count("claim")
			return
		}
		switch c.Status {
		case "completed", "failed":
			mu.Lock()
			done[unit] = c.Status
			mu.Unlock()
			return
		case "acquired":
		default: // in_progress, retry_later: another worker's, or later
			time.Sleep(100 * time.Millisecond)
			return
		}
		if die(10) {
			count("after claim")
			return
		}
		req, _ := http.NewRequest(http.MethodPost, api+"/effect/"+unit, nil)
		req.Header.Set("Idempotency-Key", c.DownstreamKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("side effect: %v", err)
			return
		}
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if die(10) {
			count("after effect")
			return
		}
		var args []string
		switch {
		case resp.StatusCode == http.StatusOK:
			args = []string{"complete", unit, "--ns", "model", "--token", c.Token, "--result", body.String()}
		case resp.StatusCode == http.StatusPaymentRequired:
			args = []string{"fail", unit, "--ns", "model", "--token", c.Token, "--permanent", "--error", body.String()}
		default:
			args = []string{"fail", unit, "--ns", "model", "--token", c.Token, "--retryable", "--error", body.String()}
		}
		if _, ok := keyKilled(t, dir, state, killAfter(20), args...); !ok {
			count("during " + args[0])
		}
	}

	runWorkers := func(phase string, chaos bool, until time.Duration) {
		deadline := time.Now().Add(until)
		var wg gosync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(w)+100))
				for !finished() && time.Now().Before(deadline) && !t.Failed() {
					mu.Lock()
					var open []string
					for _, u := range names {
						if done[u] == "" {
							open = append(open, u)
						}
					}
					mu.Unlock()
					if len(open) == 0 {
						return
					}
					work(rng, open[rng.IntN(len(open))], chaos)
				}
			}()
		}
		wg.Wait()
		t.Logf("%s: %d of %d units done", phase, len(done), units)
	}
	runWorkers("with kills", true, 25*time.Second)
	runWorkers("without kills", false, 60*time.Second)
	t.Logf("kills: %v", kills)

	for _, u := range names {
		g, _ := key(t, dir, state, "get", u, "--ns", "model")
		fx.mu.Lock()
		applied := fx.applied[u]
		fx.mu.Unlock()
		switch {
		case g.State != "completed" && g.State != "failed":
			t.Errorf("unit %s ended %q, want completed or failed", u, g.State)
		case g.State == "failed" && (!declined[u] || !strings.Contains(string(g.Error), "card_declined")):
			t.Errorf("unit %s failed without its reason: %s", u, g.Error)
		case declined[u] && applied != 0:
			t.Errorf("declined unit %s applied %d times", u, applied)
		case fx.honours(u) && applied > 1:
			t.Errorf("unit %s: the API honours the key and applied it %d times", u, applied)
		case applied > 1+int(g.UnknownLeases):
			t.Errorf("unit %s applied %d times with %d expired leases: a silent double", u, applied, g.UnknownLeases)
		case g.State == "completed" && applied == 0:
			t.Errorf("unit %s completed and never applied", u)
		}
		if applied > 1 {
			t.Logf("unit %s: %d effects, all visible (%d expired leases)", u, applied, g.UnknownLeases)
		}
	}
}
