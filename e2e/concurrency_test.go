package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// concurrentJob is the page style with n requests in flight.
func concurrentJob(url string, n int, extra string) string {
	j := styleJob("page", url, "sqlite:out.db")
	return strings.Replace(j, "  timeout: 5s\n", "  timeout: 5s\n  concurrency: "+strconv.Itoa(n)+"\n"+extra, 1)
}

// Concurrency 8 with random SIGKILLs: pages are committed in order, so every
// resume continues after the last contiguous committed page, without a gap
// or a duplicate.
func TestConcurrentCrashConvergence(t *testing.T) {
	const records, kills = 6000, 15
	api, url := startAPI(t, fakeapi.Options{Records: records, Latency: 8 * time.Millisecond, Seed: 5})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", concurrentJob(url, 8, ""))
	seed := uint64(time.Now().UnixNano())
	st := crashLoop(t, dir, job, kills, seed, 15*time.Millisecond, 80*time.Millisecond)
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	runs := statusRuns(t, dir, job)
	completed := 0
	for _, r := range runs {
		if r.Status == "completed" {
			completed++
		}
	}
	// A kill wastes at most the 8 pages in flight, the finished page
	// handed over and waiting for the commit, and the page being
	// committed; a full pass fetches at most 8 pages past the end.
	fullPass := records/25 + 8
	bound := completed*fullPass + 10*st.kills
	t.Logf("concurrency 8 (seed %d): %d kills, %d completed early, %d requests (bound %d)", seed, st.kills, st.completions, api.TotalRequests(), bound)
	if got := api.TotalRequests(); got > bound {
		t.Errorf("%d requests, more than %d: a resumed run started over", got, bound)
	}
}

// Concurrency with 30% faults converges, and runs stop issuing requests
// soon after the end of pagination is known.
func TestConcurrentChaosConverges(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 2000, Latency: 2 * time.Millisecond, Seed: 9,
		Faults: fakeapi.Faults{Rate: 0.3, Seed: 9, MaxConsecutive: 3, SlowDelay: 300 * time.Millisecond,
			Kinds: []string{fakeapi.Fault429Seconds, fakeapi.Fault429Past, fakeapi.Fault500, fakeapi.Fault502, fakeapi.Fault503,
				fakeapi.Fault504, fakeapi.FaultReset, fakeapi.FaultTruncated, fakeapi.FaultHTML}}})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", concurrentJob(url, 4, ""))
	runs := 0
	for {
		runs++
		r := idemsync(t, dir, nil, "run", job, "--quiet")
		if r.code == 0 {
			break
		}
		if r.code != 3 || runs > 10 {
			t.Fatalf("run %d: exit %d: %s", runs, r.code, r.stderr)
		}
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	t.Logf("concurrency 4, 30%% faults: converged after %d run(s); faults %v", runs, api.FaultCounts())
}

// rate_limit holds across all workers, counted where the requests arrive.
func TestRateLimitHoldsAcrossWorkers(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 1500})
	const limit = 10
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", concurrentJob(url, 8, "  rate_limit: 10\n"))
	steps := filepath.Join(dir, "steps.log")
	r := idemsync(t, dir, []string{"IDEMSYNC_TEST_STEP_LOG=" + steps}, "run", job, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
	sends := stepTimes(t, steps, "request")
	if len(sends) < 50 {
		t.Fatalf("only %d requests: the job did not page through", len(sends))
	}
	// The binary stamps each request when the shared limiter lets it go
	// (internal/failpoint's step log), so neither network nor server
	// delays move it. A stamp can still be late by the time the process
	// waits for a CPU after the grant (here, under a load of 35 on two
	// cores, up to 12 of the limit's 10 stamps fell in one second), so any
	// one-second window may hold two sends more than the limit. The rate
	// over the whole run (about six seconds) must stay within 5% of it.
	// Eight workers without the shared limiter would send the 61 requests
	// in well under a second, a bucket with a burst of the rate up to twice
	// the limit in its first second, and a limiter 10% too fast fails the
	// rate.
	worst := 0
	for i := range sends {
		n := 0
		for j := i; j < len(sends) && sends[j].Sub(sends[i]) < time.Second; j++ {
			n++
		}
		worst = max(worst, n)
	}
	span := sends[len(sends)-1].Sub(sends[0]).Seconds()
	avg := float64(len(sends)-1) / span
	t.Logf("%d requests sent over %.2fs (%.2f/s), at most %d in any one-second window (limit %d)", len(sends), span, avg, worst, limit)
	if worst > limit+2 {
		t.Errorf("%d requests sent in one second, limit %d", worst, limit)
	}
	if avg > limit*1.05 {
		t.Errorf("%.2f requests per second sent over the run, limit %d", avg, limit)
	}
}

// stepTimes reads the binary's step log (IDEMSYNC_TEST_STEP_LOG) and
// returns when it reached step, in order.
func stepTimes(t *testing.T, path, step string) []time.Time {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("step log: %v", err)
	}
	var out []time.Time
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, ns, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil {
			t.Fatalf("step log line %q", line)
		}
		if name == step {
			out = append(out, time.Unix(0, n))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}
