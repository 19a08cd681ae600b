package sync

import (
	"math/rand/v2"
	"time"
)

// Backoff returns the wait before retry n (from 0): Retry-After when the
// server gave one (capped at max), else a random wait between min and
// min·2ⁿ capped at max (exponential backoff with full jitter;
// docs/job-file.md, "retry"). It is the one retry schedule: the HTTP
// fetcher's client waits with it between attempts (its Backoff hook) and
// the engine before fetching a contradicted page again.
func Backoff(min, max time.Duration, n int, retryAfter time.Duration, hasAfter bool) time.Duration {
	if hasAfter && retryAfter > 0 {
		return time.Duration(minInt64(int64(retryAfter), int64(max)))
	}
	ceil := min
	for i := 0; i < n && ceil < max; i++ {
		ceil *= 2
	}
	if ceil > max {
		ceil = max
	}
	if ceil <= min {
		return min
	}
	return min + time.Duration(rand.Int64N(int64(ceil-min)+1))
}

func minInt64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}
