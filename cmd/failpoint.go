package cmd

import (
	"os"
	"strconv"
	"strings"
	gosync "sync"

	httpsource "github.com/idemsync/idemsync/source/http"
	idsync "github.com/idemsync/idemsync/sync"
)

// installFailpoint arms the crash tests' failpoint: with
// IDEMSYNC_TEST_FAILPOINT=STEP[:N] the process kills itself (SIGKILL on Unix,
// TerminateProcess on Windows: no deferred code runs) the N-th time (default
// 1) it reaches STEP, one of request (an HTTP attempt is about to be sent),
// fetched, target-committed, checkpoint-committed, and of a full pass's
// sweep: sweep-loaded (seen keys loaded, nothing removed), sweep-applied
// (rows removed, not committed), swept (committed, run not yet completed).
// Unset, it costs nothing.
func installFailpoint(e *idsync.Engine, f *httpsource.Fetcher) {
	spec := os.Getenv("IDEMSYNC_TEST_FAILPOINT")
	if spec == "" {
		return
	}
	step, nth, _ := strings.Cut(spec, ":")
	n, err := strconv.Atoi(nth)
	if err != nil || n < 1 {
		n = 1
	}
	var mu gosync.Mutex
	hits := 0
	hit := func(s string) {
		if s != step {
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
	e.Failpoint = hit
	f.BeforeRequest = func() { hit("request") }
}
