// Package storetest is the conformance suite of the state store
// (contract.Store): every implementation runs it from a harness test of
// its own, as the SQLite state file does in checkpoint/harness_test.go. A
// new store (PostgreSQL) passes it unchanged.
//
// The suite drives a store through the interface only. The cases check
// what a crash, a second process or a later command relies on: a page's
// commit is all or nothing, the run lock excludes a second holder,
// another store that took a run over fences the first, what was committed
// survives closing the store, and prune keeps what a later run needs.
package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// Harness is one store implementation as the suite drives it.
type Harness struct {
	// New makes a new, empty state (a new SQLite file, a new PostgreSQL
	// schema) and returns how to open it. Every call of open returns
	// another Store on that same state, as another process would open
	// it: the lock and takeover cases use two.
	New func(t *testing.T) (open func(t *testing.T) contract.Store)
	// BeforeCommit, when set, arranges for fn to run once, inside s's
	// next write transaction, just before it commits (a fault injected
	// between the writes and their commit). Nil skips the cases that
	// need it.
	BeforeCommit func(s contract.Store, fn func())
	// Lease is the length of the store's run lock lease as the harness
	// opens it (keep it short: the lease cases wait for it to expire);
	// zero for a lock that does not expire (the SQLite file's OS lock
	// dies with its process), which skips the lease cases.
	Lease time.Duration
	// Pause stops s renewing the leases it holds, as a process stopped
	// by SIGSTOP or cut off from the database would; nil skips the lease
	// cases.
	Pause func(s contract.Store)
	// Skip names cases the store cannot run yet, with the reason.
	Skip map[string]string
}

// testCase is one check of the suite, run on a fresh state.
type testCase struct {
	name string
	run  func(t *testing.T, e *env)
}

// Run runs the suite: every case as a subtest of t, each on a new state.
func Run(t *testing.T, h Harness) {
	t.Helper()
	var cases []testCase
	cases = append(cases, runCases()...)
	cases = append(cases, pageCases()...)
	cases = append(cases, lockCases()...)
	cases = append(cases, leaseCases()...)
	cases = append(cases, passCases()...)
	cases = append(cases, pendingCases()...)
	cases = append(cases, sideCases()...)
	cases = append(cases, runKeyCases()...)
	cases = append(cases, dumpCases()...)
	cases = append(cases, maintenanceCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if reason, ok := h.Skip[tc.name]; ok {
				t.Skip(reason)
			}
			tc.run(t, &env{h: h, open: h.New(t)})
		})
	}
}

// env is one case's state and the harness that made it.
type env struct {
	h    Harness
	open func(t *testing.T) contract.Store
}

// store opens a Store on the case's state, closed when the test ends.
func (e *env) store(t *testing.T) contract.Store {
	t.Helper()
	s, _ := e.closable(t)
	return s
}

// closable opens a Store on the case's state and returns a close that may
// be called more than once (the test ends by calling it too).
func (e *env) closable(t *testing.T) (contract.Store, func()) {
	t.Helper()
	s := e.open(t)
	var once sync.Once
	closeIt := func() {
		once.Do(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	t.Cleanup(closeIt)
	return s, closeIt
}
