package checkpoint

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/idemsync/idemsync/checkpoint/storetest"
	"github.com/idemsync/idemsync/contract"
)

// TestLedgerConformance runs the side-effect ledger's suite on the SQLite
// state file.
func TestLedgerConformance(t *testing.T) {
	storetest.RunLedger(t, storetest.Harness{
		New: func(t *testing.T) func(t *testing.T) contract.Store {
			path := filepath.Join(t.TempDir(), "state.db")
			return func(t *testing.T) contract.Store {
				s, err := Open(context.Background(), path, testLogger(t))
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				return s
			}
		},
	})
}
