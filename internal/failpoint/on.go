//go:build failpoint

package failpoint

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	armed = sync.OnceValues(parse)
	mu    sync.Mutex
	hits  int
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

// Hit kills the process when step is the armed one and this is its N-th hit.
func Hit(step string) {
	want, n := armed()
	if want == "" || step != want {
		return
	}
	mu.Lock()
	hits++
	h := hits
	mu.Unlock()
	if h == n {
		p, _ := os.FindProcess(os.Getpid())
		_ = p.Kill()
		select {} // wait for the kill
	}
}
