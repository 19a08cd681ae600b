package sqlite_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
)

// stubSink is a database that does nothing and says it did: every method
// returns zero values and no error. A conformance case it passes tests
// nothing.
type stubSink struct{}

var _ contract.Sink = stubSink{}

func (stubSink) Prepare(context.Context, *contract.Table) error { return nil }
func (stubSink) Upsert(context.Context, *contract.Table, []contract.Row) (contract.Counts, error) {
	return contract.Counts{}, nil
}
func (stubSink) Close() error { return nil }
func (stubSink) TableState(context.Context, *contract.Table) (bool, bool, error) {
	return false, false, nil
}
func (stubSink) KeyForms(context.Context, *contract.Table, []contract.Row) ([]string, error) {
	return nil, nil
}
func (stubSink) Sweep(context.Context, *contract.Table, contract.SweepRequest) (contract.SweepResult, error) {
	return contract.SweepResult{}, nil
}
func (stubSink) LiveRows(context.Context, *contract.Table) (int64, error)               { return 0, nil }
func (stubSink) ClaimTable(context.Context, *contract.Table, contract.TableClaim) error { return nil }
func (stubSink) ParentRows(context.Context, *contract.Table, []string, contract.ParentFilter) ([][]*string, error) {
	return nil, nil
}
func (stubSink) MissingParents(context.Context, *contract.Table, func(func(string) error) error) (string, error) {
	return "", nil
}
func (stubSink) LatestRows(context.Context, *contract.Table, int) ([]string, [][]*string, error) {
	return nil, nil, nil
}
func (stubSink) CheckRow(*contract.Table, contract.Row) error { return nil }
func (stubSink) FeedDB(context.Context, *contract.Table) (contract.FeedDB, error) {
	return contract.FeedDB{}, nil
}

// stubEnv makes TestStubConformance run: only as the child process of
// TestConformanceRejectsStub, where its failures are expected.
const stubEnv = "IDEMSYNC_SINKTEST_STUB"

// TestStubConformance runs the suite against stubSink (raw SQL on a real
// SQLite file). It is expected to fail every case; it runs only under
// TestConformanceRejectsStub.
func TestStubConformance(t *testing.T) {
	if os.Getenv(stubEnv) == "" {
		t.Skip("runs as TestConformanceRejectsStub's child")
	}
	sinktest.Run(t, func(t *testing.T) *sinktest.DB {
		b := newSQLiteBackend(t)
		b.Open = func(context.Context) (contract.Sink, error) { return stubSink{}, nil }
		return b
	})
}

// Every case of the conformance suite fails for a sink that does nothing:
// a case that passes for it asserts nothing about the database.
func TestConformanceRejectsStub(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole suite in a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStubConformance$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), stubEnv+"=1")
	out, _ := cmd.CombinedOutput() // fails by design
	result := regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): TestStubConformance/(\S+)`)
	var failed int
	var passed []string
	for _, m := range result.FindAllStringSubmatch(string(out), -1) {
		if m[1] == "FAIL" {
			failed++
		} else {
			passed = append(passed, m[1]+" "+m[2])
		}
	}
	if failed == 0 || len(passed) > 0 {
		t.Fatalf("stub sink: %d case(s) failed; these did not (they test nothing): %s\n%s", failed, strings.Join(passed, ", "), tail(string(out), 3000))
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
