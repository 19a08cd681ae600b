package checkpoint

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// BenchmarkLedgerOpenClaim is what one `idemsync key claim` process does
// with the state file, without the process start: open the file, claim a
// new key, close (docs/ledger.md, "Speed").
func BenchmarkLedgerOpenClaim(b *testing.B) {
	ctx := context.Background()
	p := filepath.Join(b.TempDir(), "state.db")
	s, err := Open(ctx, p, nil)
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	i := 0
	for b.Loop() {
		i++
		s, err := Open(ctx, p, nil)
		if err != nil {
			b.Fatal(err)
		}
		r := contract.ClaimRequest{NS: "bench", Key: fmt.Sprintf("k-%d", i), TTL: time.Minute, Token: "t"}
		if _, err := s.Claim(ctx, []contract.ClaimRequest{r}); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
