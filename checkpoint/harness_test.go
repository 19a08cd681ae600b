package checkpoint

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/idemsync/idemsync/checkpoint/storetest"
	"github.com/idemsync/idemsync/contract"
)

// TestConformance runs the suite every state store passes on the SQLite
// state file.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) func(t *testing.T) contract.Store {
			path := filepath.Join(t.TempDir(), "state", "state.db")
			return func(t *testing.T) contract.Store {
				s, err := Open(context.Background(), path, testLogger(t))
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				return s
			}
		},
		BeforeCommit: func(s contract.Store, fn func()) {
			cs := s.(*Store)
			var once sync.Once
			cs.beforeCommit = func() { once.Do(fn) }
		},
	})
}
