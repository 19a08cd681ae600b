package e2e

import (
	"encoding/json"
	"fmt"
	gosync "sync"
	"testing"
	"time"
)

// A holder's heartbeat, complete or fail races another worker's claim just
// after the holder's lease ran out, on SQLite and PostgreSQL (the real
// binary, one process each, started at once): exactly one of them wins,
// never both — a heartbeat that renewed (ok) leaves the claim
// in_progress, a claim that acquired leaves the holder stale_token, and a
// complete that recorded leaves the claim completed. Two "yours" answers
// would be the side effect done twice with no expired_unknown to show
// it (docs/ledger.md, "What each crash leaves").
func TestLedgerOutcomeRacesReclaim(t *testing.T) {
	dir := t.TempDir()
	for name, state := range ledgerStates(t, dir) {
		t.Run(name, func(t *testing.T) {
			wins := map[string]int{}
			for i := range 6 {
				op := []string{"heartbeat", "complete", "fail"}[i%3]
				k := fmt.Sprintf("race-%s-%d", op, i)
				h, _ := key(t, dir, state, "claim", k, "--ttl", "300ms", "--owner", "w1")
				wantKey(t, "holder's claim", h, "acquired")
				time.Sleep(time.Duration(300+40*i) * time.Millisecond)
				args := []string{op, k, "--token", h.Token}
				if op == "fail" {
					args = append(args, "--permanent")
				}
				var holder, other keyJSON
				var wg gosync.WaitGroup
				wg.Add(2)
				go func() { defer wg.Done(); holder, _ = keyNoFatal(t, dir, state, args...) }()
				go func() { defer wg.Done(); other, _ = keyNoFatal(t, dir, state, "claim", k, "--owner", "w2") }()
				wg.Wait()
				holderWon := holder.Status == "ok" || holder.Status == "completed" || holder.Status == "failed"
				switch {
				case holderWon && other.Status == "acquired":
					t.Errorf("%s: the holder's %s answered %s and the other's claim acquired (%+v): both act", k, op, holder.Status, other)
				case !holderWon && holder.Status != "stale_token":
					t.Errorf("%s: the holder's %s answered %+v", k, op, holder)
				case !holderWon && (other.Status != "acquired" || other.Previous != "expired_unknown"):
					t.Errorf("%s: the holder's %s was stale, the claim answered %+v: want acquired, expired_unknown", k, op, other)
				case holderWon && op == "heartbeat" && other.Status != "in_progress",
					holderWon && op == "complete" && other.Status != "completed",
					holderWon && op == "fail" && other.Status != "failed":
					t.Errorf("%s: the holder's %s won (%s), the claim answered %+v", k, op, holder.Status, other)
				}
				if holderWon {
					wins["holder"]++
				} else {
					wins["claimer"]++
				}
			}
			t.Logf("wins: %v", wins)
		})
	}
}

// keyNoFatal is key for a goroutine: a call whose stdout is not one JSON
// object is an error of the test, not a Fatal from the wrong goroutine.
func keyNoFatal(t *testing.T, dir, state string, args ...string) (keyJSON, result) {
	var k keyJSON
	r := idemsync(t, dir, []string{"IDEMSYNC_STATE=" + state}, append([]string{"key"}, args...)...)
	if err := json.Unmarshal([]byte(r.stdout), &k); err != nil {
		t.Errorf("key %v: %v\nstdout: %s\nstderr: %s", args, err, r.stdout, r.stderr)
	}
	return k, r
}

// `key gc` given a retention that means "forever" to a careless reader
// deletes nothing: --keep 0 (which reads as "no limit" in many tools) and
// a number of days past what a duration holds (213504d wrapped round to
// 25 minutes) are refused, exit 2, and a completed key still replays its
// result. Deleted, the next delivery of its unit would act again
// (docs/ledger.md, "Retention").
func TestLedgerGCKeepForever(t *testing.T) {
	dir := t.TempDir()
	for name, state := range ledgerStates(t, dir) {
		t.Run(name, func(t *testing.T) {
			a, _ := key(t, dir, state, "claim", "inv-9")
			key(t, dir, state, "complete", "inv-9", "--token", a.Token, "--result", `{"sent":true}`)
			time.Sleep(50 * time.Millisecond)
			for _, keep := range []string{"0", "0s", "0d", "213504d", "106752d"} {
				r := idemsync(t, dir, []string{"IDEMSYNC_STATE=" + state}, "key", "gc", "--keep", keep)
				if r.code != 2 {
					t.Errorf("key gc --keep %s: exit %d, want 2\n%s%s", keep, r.code, r.stdout, r.stderr)
				}
			}
			if c, _ := key(t, dir, state, "claim", "inv-9"); c.Status != "completed" || string(c.Result) != `{"sent":true}` {
				t.Fatalf("the completed key after the refused gcs: %+v, want its replay", c)
			}
		})
	}
}
