package e2e

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// shortTier is what go test -short runs of this package: one quick test of
// each thing the binary must get right end to end (a clean run of every
// style, a kill and its resume, partial runs, the lock, bad job files and
// their exit codes, the end proof, secrets, deletions, several resources,
// PostgreSQL, serve). The model, crash, chaos and every other test need minutes
// of subprocesses and run in the default tier, which CI runs
// (docs/fault-tolerance.md).
var shortTier = []string{
	"TestCleanRunEqualsSource",
	"TestPartialRunsResumeAndStatus",
	"TestInterruptSavesCheckpoint",
	"TestOverlappingRuns",
	"TestBadSpecs",
	"TestEndProofContradictedPage",
	"TestSecretsCanary",
	"TestDeletesBetweenRuns",
	"TestResourcesAggregateJSON",
	"TestPostgresEndToEnd",
	"TestServeRunStatusShutdown",
}

// shortTierOnly narrows the run to shortTier under -short, unless -run
// already chose the tests, and says so on stderr. It needs parsed flags.
func shortTierOnly() {
	if !testing.Short() || flag.Lookup("test.run").Value.String() != "" {
		return
	}
	if err := flag.Set("test.run", "^("+strings.Join(shortTier, "|")+")$"); err != nil {
		panic(err)
	}
	fmt.Fprintf(os.Stderr, "e2e: -short runs the %d tests of the short tier (e2e/tiers_test.go) and skips the model, crash, chaos and other long tests; run without -short for all of them\n", len(shortTier))
}
