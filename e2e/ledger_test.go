package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"
)

// keyJSON is the result object of an `idemsync key` call (docs/ledger.md).
type keyJSON struct {
	Status        string          `json:"status"`
	NS            string          `json:"ns"`
	Key           string          `json:"key"`
	State         string          `json:"state"`
	Token         string          `json:"token"`
	Attempt       int64           `json:"attempt"`
	DownstreamKey string          `json:"downstream_key"`
	Previous      string          `json:"previous"`
	UnknownLeases int64           `json:"unknown_leases"`
	Expected      string          `json:"expected_fingerprint"`
	Result        json.RawMessage `json:"result"`
	Error         json.RawMessage `json:"error"`
	Message       string          `json:"message"`
	ExitCode      int             `json:"exit_code"`
}

// ledgerStates returns the states the ledger tests run on: a SQLite file
// in dir, and a PostgreSQL schema of the test's own when
// IDEMSYNC_TEST_POSTGRES_URL is set.
func ledgerStates(t *testing.T, dir string) map[string]string {
	t.Helper()
	states := map[string]string{"sqlite": filepath.Join(dir, "ledger.db")}
	if u := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL"); u != "" {
		states["postgres"] = pgStateURL(t, u, freshSchema(t, u), "30s")
	}
	return states
}

// key runs `idemsync key ARGS` on state and parses its one JSON object.
func key(t *testing.T, dir, state string, args ...string) (keyJSON, result) {
	t.Helper()
	r := idemsync(t, dir, []string{"IDEMSYNC_STATE=" + state}, append([]string{"key"}, args...)...)
	var k keyJSON
	if err := json.Unmarshal([]byte(r.stdout), &k); err != nil {
		t.Fatalf("key %v: stdout is not one JSON object: %v\nstdout: %s\nstderr: %s", args, err, r.stdout, r.stderr)
	}
	return k, r
}

func wantKey(t *testing.T, what string, k keyJSON, status string) {
	t.Helper()
	if k.Status != status {
		t.Fatalf("%s: status %q, want %q (%+v)", what, k.Status, status, k)
	}
}

// Fifty processes claim one key at once: exactly one acquires, the others
// see in_progress, and no claimer fails busy (SQLite: BEGIN IMMEDIATE with
// a busy timeout; PostgreSQL: INSERT … ON CONFLICT).
func TestLedgerFiftyClaimers(t *testing.T) {
	dir := t.TempDir()
	for name, state := range ledgerStates(t, dir) {
		t.Run(name, func(t *testing.T) {
			key(t, dir, state, "get", "warm") // migrate once, not 50 times at once
			for round := range 2 {
				k := fmt.Sprintf("order-%d", round)
				const n = 50
				out := make([]keyJSON, n)
				res := make([]result, n)
				var wg gosync.WaitGroup
				start := make(chan struct{})
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						out[i], res[i] = key(t, dir, state, "claim", k, "--ttl", "1m")
					}()
				}
				close(start)
				wg.Wait()
				acquired := 0
				for i := range n {
					switch {
					case res[i].code != 0:
						t.Fatalf("claimer %d: exit %d: %s", i, res[i].code, res[i].stderr)
					case out[i].Status == "acquired":
						acquired++
					case out[i].Status != "in_progress":
						t.Fatalf("claimer %d: status %q", i, out[i].Status)
					}
				}
				if acquired != 1 {
					t.Fatalf("round %d: %d of %d processes acquired %s, want exactly 1", round, acquired, n, k)
				}
			}
		})
	}
}

// The whole surface through the binary: claim, complete, replay, lease
// expiry with a stale token, the same owner, mismatch, fail, resolve, gc,
// --exit-codes, batch, and keys at their limits.
func TestLedgerCommands(t *testing.T) {
	dir := t.TempDir()
	for name, state := range ledgerStates(t, dir) {
		t.Run(name, func(t *testing.T) {
			a, _ := key(t, dir, state, "claim", "inv-1", "--params", `{"amount":100,"to":"a@x"}`)
			wantKey(t, "claim", a, "acquired")
			if a.Token == "" || !strings.HasPrefix(a.DownstreamKey, "idem_") || a.Attempt != 1 {
				t.Fatalf("acquired: %+v", a)
			}
			// Same params in another order and number spelling: the same unit.
			b, r := key(t, dir, state, "claim", "inv-1", "--params", `{"to":"a@x","amount":100.0}`, "--exit-codes")
			wantKey(t, "second claim", b, "in_progress")
			if r.code != 11 || b.Token != "" {
				t.Fatalf("in_progress: exit %d token %q; want 11 and no token", r.code, b.Token)
			}
			m, r := key(t, dir, state, "claim", "inv-1", "--params", `{"amount":200,"to":"a@x"}`, "--exit-codes")
			wantKey(t, "claim with other params", m, "mismatch")
			if r.code != 15 || m.Expected == "" {
				t.Fatalf("mismatch: exit %d %+v", r.code, m)
			}
			c, _ := key(t, dir, state, "complete", "inv-1", "--token", a.Token, "--result", `{"charge":"ch_1"}`)
			wantKey(t, "complete", c, "completed")
			rp, r := key(t, dir, state, "claim", "inv-1", "--exit-codes")
			wantKey(t, "claim after complete", rp, "completed")
			if r.code != 10 || string(rp.Result) != `{"charge":"ch_1"}` || rp.DownstreamKey != a.DownstreamKey {
				t.Fatalf("replay: exit %d %+v", r.code, rp)
			}

			// Lease expiry: the next claimant gets a new token; the first
			// holder's complete is refused.
			old, _ := key(t, dir, state, "claim", "inv-2", "--ttl", "300ms")
			time.Sleep(600 * time.Millisecond)
			nw, _ := key(t, dir, state, "claim", "inv-2")
			wantKey(t, "claim after expiry", nw, "acquired")
			if nw.Previous != "expired_unknown" || nw.Token == old.Token || nw.Attempt != 2 || nw.UnknownLeases != 1 {
				t.Fatalf("after expiry: %+v", nw)
			}
			st, r := key(t, dir, state, "complete", "inv-2", "--token", old.Token, "--exit-codes")
			wantKey(t, "stale complete", st, "stale_token")
			if r.code != 16 {
				t.Fatalf("stale_token exit %d, want 16", r.code)
			}
			if g, _ := key(t, dir, state, "get", "inv-2"); g.State != "pending" {
				t.Fatalf("stale complete changed the key: %+v", g)
			}

			// The same owner gets its claim back.
			o1, _ := key(t, dir, state, "claim", "inv-3", "--owner", "exec-7")
			o2, _ := key(t, dir, state, "claim", "inv-3", "--owner", "exec-7")
			if o2.Status != "acquired" || o2.Token != o1.Token || o2.Previous != "reclaimed" {
				t.Fatalf("same owner: %+v then %+v", o1, o2)
			}
			wantKey(t, "other owner", func() keyJSON { k, _ := key(t, dir, state, "claim", "inv-3", "--owner", "exec-8"); return k }(), "in_progress")

			// fail --retryable, then --permanent.
			f, _ := key(t, dir, state, "fail", "inv-3", "--token", o1.Token, "--retryable", "--error", `{"http":503}`)
			wantKey(t, "fail retryable", f, "retry_later")
			f2, _ := key(t, dir, state, "claim", "inv-3")
			if f2.Status != "acquired" || f2.Previous != "failed_retryable" {
				t.Fatalf("claim after retryable fail: %+v", f2)
			}
			key(t, dir, state, "fail", "inv-3", "--token", f2.Token, "--permanent", "--error", `{"http":402}`)
			pf, r := key(t, dir, state, "claim", "inv-3", "--exit-codes")
			if pf.Status != "failed" || r.code != 13 || string(pf.Error) != `{"http":402}` {
				t.Fatalf("claim after permanent fail: exit %d %+v", r.code, pf)
			}

			// hold, then an operator resolves.
			key(t, dir, state, "claim", "inv-4", "--ttl", "200ms")
			time.Sleep(400 * time.Millisecond)
			h, r := key(t, dir, state, "claim", "inv-4", "--on-expired", "hold", "--exit-codes")
			if h.Status != "held" || r.code != 14 {
				t.Fatalf("hold: exit %d %+v", r.code, h)
			}
			lst := idemsync(t, dir, []string{"IDEMSYNC_STATE=" + state}, "key", "list", "--status", "held")
			if !strings.Contains(lst.stdout, `"count":1`) || !strings.Contains(lst.stdout, "inv-4") {
				t.Fatalf("list --status held: %s", lst.stdout)
			}
			rs, _ := key(t, dir, state, "resolve", "inv-4", "--as", "completed", "--result", `{"checked":"by hand"}`)
			wantKey(t, "resolve", rs, "completed")
			if k, _ := key(t, dir, state, "claim", "inv-4"); k.Status != "completed" {
				t.Fatalf("claim after resolve: %+v", k)
			}

			// gc keeps open keys.
			time.Sleep(50 * time.Millisecond)
			gc := idemsync(t, dir, []string{"IDEMSYNC_STATE=" + state}, "key", "gc", "--keep", "1ms")
			if gc.code != 0 || !strings.Contains(gc.stdout, `"deleted":3`) {
				t.Fatalf("gc: exit %d %s %s", gc.code, gc.stdout, gc.stderr)
			}
			if g, _ := key(t, dir, state, "get", "inv-2"); g.State != "pending" {
				t.Fatalf("gc removed an open key: %+v", g)
			}

			// Keys: 255 bytes of UTF-8 pass, 256 are refused (exit 2).
			long := strings.Repeat("ü", 127) + "k"
			if k, _ := key(t, dir, state, "claim", long); k.Status != "acquired" || k.Key != long {
				t.Fatalf("255-byte key: %+v", k)
			}
			e, r := key(t, dir, state, "claim", long+"x")
			if r.code != 2 || e.Status != "error" || !strings.Contains(r.stdout, "256 bytes") {
				t.Fatalf("256-byte key: exit %d %s", r.code, r.stdout)
			}
		})
	}
}

// claim --batch: one result line per input line, in order; a bad line
// (a NUL in its key, not JSON) is invalid and the others go on.
func TestLedgerBatch(t *testing.T) {
	dir := t.TempDir()
	for name, state := range ledgerStates(t, dir) {
		t.Run(name, func(t *testing.T) {
			key(t, dir, state, "claim", "b-2")
			var in strings.Builder
			for i := range 1100 {
				fmt.Fprintf(&in, `{"key":"b-%d","params":{"i":%d}}`+"\n", i, i)
			}
			in.WriteString(`{"key":"nul\u0000key"}` + "\n" + "not json\n" + `{"key":"b-5"}` + "\n")
			r := idemsyncStdin(t, dir, []string{"IDEMSYNC_STATE=" + state}, in.String(), "key", "claim", "--batch", "--ttl", "1m")
			if r.code != 0 {
				t.Fatalf("batch: exit %d: %s", r.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(lines) != 1103 {
				t.Fatalf("batch: %d result lines for 1103 input lines", len(lines))
			}
			for i, line := range lines {
				var k keyJSON
				if err := json.Unmarshal([]byte(line), &k); err != nil {
					t.Fatalf("line %d: %v: %s", i+1, err, line)
				}
				want := "acquired"
				switch {
				case i == 2 || i == 1102:
					want = "in_progress"
				case i == 1100 || i == 1101:
					want = "invalid"
				}
				if k.Status != want {
					t.Fatalf("line %d: status %q, want %q: %s", i+1, k.Status, want, line)
				}
				if i < 1100 && k.Key != fmt.Sprintf("b-%d", i) {
					t.Fatalf("line %d: key %q, want b-%d (results out of order)", i+1, k.Key, i)
				}
			}
			if !strings.Contains(lines[1100], "NUL") {
				t.Errorf("NUL key's line does not say why: %s", lines[1100])
			}
		})
	}
}

// A store that cannot be reached fails closed: a non-zero exit, status
// error, nothing acquired.
func TestLedgerStoreDown(t *testing.T) {
	dir := t.TempDir()
	k, r := key(t, dir, "postgres://nobody:pw@127.0.0.1:1/none?connect_timeout=2", "claim", "x")
	if r.code != 3 || k.Status != "error" || k.Token != "" {
		t.Fatalf("unreachable store: exit %d %s", r.code, r.stdout)
	}
	if strings.Contains(r.stdout+r.stderr, ":pw@") {
		t.Fatalf("password printed: %s %s", r.stdout, r.stderr)
	}
}

// Usage errors print their object too (status error, exit 2), and open no
// store: no state file is created.
func TestLedgerUsageErrors(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.db")
	for _, args := range [][]string{
		{"claim"},
		{"claim", "a", "b"},
		{"claim", "--batch", "a"},
		{"complete", "k"},
		{"fail", "k", "--token", "t"},
		{"fail", "k", "--token", "t", "--permanent", "--not-before", "1m"},
		// Negative durations, refused as idemsync serve refuses them.
		{"fail", "k", "--token", "t", "--retryable", "--not-before", "-5m"},
		{"claim", "k", "--wait", "-5s"},
		// An empty namespace (an unset variable) is not the default one:
		// two families' keys would be one unit.
		{"claim", "k", "--ns", ""},
		{"complete", "k", "--ns", "", "--token", "t"},
		{"get", "k", "--ns", ""},
		// So is an empty --on-expired or --ttl: read as retry and 10m, an
		// unset $POLICY acted on an expired lease meant to be held.
		{"claim", "k", "--on-expired", ""},
		{"claim", "k", "--ttl", ""},
		{"claim", "--batch", "--on-expired", ""},
		{"list", "--status", "done"},
		{"derive"},
	} {
		k, r := key(t, dir, state, args...)
		if r.code != 2 || k.Status != "error" {
			t.Errorf("key %v: exit %d %s; want 2 and status error", args, r.code, r.stdout)
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("a usage error created the state file: %v", err)
	}
}
