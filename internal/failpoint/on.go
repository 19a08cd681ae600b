//go:build failpoint

package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	armed   = sync.OnceValues(parse)
	stepLog = sync.OnceValue(openStepLog)
	mu      sync.Mutex
	hits    int
)

// parse reads IDEMSYNC_TEST_FAILPOINT: the step ("" for none) and on which
// of its hits to kill.
func parse() (step string, n int) {
	step, nth, _ := strings.Cut(os.Getenv("IDEMSYNC_TEST_FAILPOINT"), ":")
	n, err := strconv.Atoi(nth)
	if err != nil || n < 1 {
		n = 1
	}
	return step, n
}

// openStepLog opens the file IDEMSYNC_TEST_STEP_LOG names, nil when unset
// or when it cannot be opened (the test reading it then fails).
func openStepLog() *os.File {
	path := os.Getenv("IDEMSYNC_TEST_STEP_LOG")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil
	}
	return f
}

// Hit appends "STEP UNIXNANO" to the step log when one is set (the
// rate-limit test reads when requests were sent, not when they arrived),
// and kills the process when step is the armed one and this is its N-th
// hit (or, with IDEMSYNC_TEST_FAILPOINT_HOLD, waits there for its file).
func Hit(step string) {
	if f := stepLog(); f != nil {
		line := fmt.Sprintf("%s %d\n", step, time.Now().UnixNano())
		mu.Lock()
		_, _ = f.WriteString(line)
		mu.Unlock()
	}
	want, n := armed()
	if want == "" || step != want {
		return
	}
	mu.Lock()
	hits++
	h := hits
	mu.Unlock()
	if h == n {
		if hold := os.Getenv("IDEMSYNC_TEST_FAILPOINT_HOLD"); hold != "" {
			for {
				if _, err := os.Stat(hold); err == nil {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		p, _ := os.FindProcess(os.Getpid())
		_ = p.Kill()
		select {} // wait for the kill
	}
}

// offset is IDEMSYNC_TEST_CLOCK_OFFSET (a Go duration, e.g. -10m; 0 when
// unset or unreadable).
var offset = sync.OnceValue(func() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("IDEMSYNC_TEST_CLOCK_OFFSET"))
	return d
})

// Now is the host's clock as a run reads it: in this build shifted by
// IDEMSYNC_TEST_CLOCK_OFFSET, so that a test runs invocations whose hosts'
// clocks disagree (or a clock stepped back between two runs). The
// monotonic reading is kept: time.Since of it is the real time elapsed.
func Now() time.Time { return time.Now().Add(offset()) }

// LockWait is the state's wait for a lock another process holds (the
// state file's busy timeout, the PostgreSQL ledger's lock wait), d unless
// IDEMSYNC_TEST_LOCK_WAIT holds a positive Go duration: a test that only
// needs the wait to end, not its length, shortens it.
func LockWait(d time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv("IDEMSYNC_TEST_LOCK_WAIT")); err == nil && v > 0 {
		return v
	}
	return d
}
