package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// chaosSeed is the fault sequence's seed: $IDEMSYNC_CHAOS_SEED to replay a
// failure, else a new one per run (logged), so CI explores new sequences.
func chaosSeed(t *testing.T) int64 {
	t.Helper()
	if s := os.Getenv("IDEMSYNC_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("IDEMSYNC_CHAOS_SEED=%q: %v", s, err)
		}
		return n
	}
	return time.Now().UnixNano()
}

// chaosJob is styleJob with a short timeout (slow faults time out), the
// fake API's error payload recognised, and fast retries: three attempts, so
// some pages exhaust them and their run exits 3.
func chaosJob(style, url string) string {
	spec := styleJob(style, url, "sqlite:out.db")
	spec = strings.Replace(spec, "  timeout: 5s\n", "  timeout: 250ms\n  error_path: error\n", 1)
	return strings.Replace(spec, "  attempts: 6\n  min_wait: 10ms\n  max_wait: 200ms\n", "  attempts: 3\n  min_wait: 1ms\n  max_wait: 20ms\n", 1)
}

// The chaos API answers 30% of requests with a fault of every kind (429
// with Retry-After in seconds, as a date, in the past and garbage; 500, 502,
// 503, 504; connection reset; truncated body; 200 with an error payload;
// slow past the timeout; an HTML maintenance page) while the data set
// changes under the sync. Runs are repeated while they exit 3 (retries
// exhausted), as cron would; then the data set stops changing and runs
// repeat until one completes again. The table must equal the source: no row
// lost, no duplicate key, no stale value.
func TestChaos(t *testing.T) {
	const records = 3000
	seed := chaosSeed(t)
	for i, style := range []string{"page", "cursor", "hwm"} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			api := fakeapi.New(fakeapi.Options{Records: records, Seed: int64(i), Faults: fakeapi.Faults{
				Rate: 0.3, Seed: seed + int64(i), SlowDelay: 2 * time.Second,
			}})
			srv := httptest.NewServer(api)
			t.Cleanup(srv.Close)
			// Every 7th good page: one record changes, one is added.
			next := 0
			api.MutateEvery(7, func(a *fakeapi.API) {
				next = next%records + 97
				a.Update(next, func(r *fakeapi.Record) { r.Name += " (changed)"; r.Total += 1 })
				a.Add(1)
			})
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", chaosJob(style, srv.URL))

			runs, exit3 := 0, 0
			untilDone := func(phase string) {
				for {
					r := idemsync(t, dir, nil, "run", job, "--quiet")
					runs++
					switch {
					case r.code == 0:
						return
					case r.code == 3:
						exit3++
					default:
						t.Fatalf("%s run %d: exit %d (only 0 and 3 are acceptable under transient faults): %s", phase, runs, r.code, r.stderr)
					}
					if runs >= 40 {
						t.Fatalf("no convergence after %d runs (seed %d)", runs, seed)
					}
				}
			}
			untilDone("changing data")
			api.MutateEvery(0, nil)
			untilDone("catch-up")

			got, want := readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api)
			rows, dups := ftTableStats(t, filepath.Join(dir, "out.db"), "orders")
			lostRows := ftLost(got, want)
			faults := api.FaultCounts()
			t.Logf("chaos %s: %d runs to convergence (%d exited 3), %d requests, faults survived %s, rows lost %d, duplicate keys %d, rows %d = source %d (seed %d)",
				style, runs, exit3, api.TotalRequests(), faultSummary(faults), lostRows, dups, rows, len(want), seed)
			if lostRows != 0 || dups != 0 {
				t.Errorf("rows lost %d, duplicate keys %d: both must be 0", lostRows, dups)
			}
			assertEqualSource(t, got, want)
			total := 0
			for _, n := range faults {
				total += n
			}
			// About 30% of the requests are faults: fewer than half of that
			// (or fewer than 8 kinds) and the run proved little. A walk
			// that converged in few requests meets fewer faults.
			if reqs := api.TotalRequests(); len(faults) < 8 || total*2 < int(0.3*float64(reqs)) {
				t.Errorf("only %d faults of %d kinds were injected in %d requests: the test proves little", total, len(faults), reqs)
			}
		})
	}
}

// faultSummary prints fault counts as "N (kind n, kind n, ...)".
func faultSummary(counts map[string]int) string {
	kinds := make([]string, 0, len(counts))
	total := 0
	for k, n := range counts {
		kinds = append(kinds, k)
		total += n
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}
