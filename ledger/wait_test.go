package ledger

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemsync/idemsync/checkpoint"
	"github.com/idemsync/idemsync/contract"
)

// --wait: a claim that finds another holder claims again until the
// holder's lease ends (then acquires, previous expired_unknown), and gives
// up with in_progress when wait ends first.
func TestClaimWait(t *testing.T) {
	ctx := context.Background()
	s, err := checkpoint.Open(ctx, filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := func(ttl string) contract.ClaimRequest {
		r, err := Claim{Key: "k", TTL: ttl}.Request()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	start := time.Now()
	first, err := ClaimAll(ctx, s, []contract.ClaimRequest{req("400ms")})
	if err != nil || first[0].Status != contract.StatusAcquired {
		t.Fatalf("first claim: %+v %v", first, err)
	}
	short, err := ClaimWait(ctx, s, req("1m"), 100*time.Millisecond, 20*time.Millisecond)
	if err != nil || short.Status != contract.StatusInProgress {
		t.Fatalf("wait 100ms: %+v %v", short, err)
	}
	long, err := ClaimWait(ctx, s, req("1m"), 20*time.Second, 6*time.Second)
	took := time.Since(start)
	if err != nil || long.Status != contract.StatusAcquired || long.Previous != contract.PrevExpiredUnknown {
		t.Fatalf("wait 20s: %+v %v", long, err)
	}
	// It polls no later than the lease's end, not only every --poll (6s).
	if took < 400*time.Millisecond || took > 4*time.Second {
		t.Errorf("acquired %v after the first claim; the lease was 400ms", took)
	}
	if long.Token == "" || long.Token == first[0].Token {
		t.Errorf("tokens: first %q, after wait %q", first[0].Token, long.Token)
	}
}
