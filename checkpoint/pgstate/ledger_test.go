package pgstate

import (
	"testing"

	"github.com/idemsync/idemsync/checkpoint/storetest"
	"github.com/idemsync/idemsync/contract"
)

// TestLedgerConformance runs the side-effect ledger's suite on a schema of
// its own per case.
func TestLedgerConformance(t *testing.T) {
	testURL(t)
	storetest.RunLedger(t, storetest.Harness{
		New: func(t *testing.T) func(t *testing.T) contract.Store {
			state := newSchema(t, nil)
			return func(t *testing.T) contract.Store { return openTest(t, state) }
		},
	})
}
