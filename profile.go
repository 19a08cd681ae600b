package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// profileEnv names a file to write a CPU profile of the whole invocation
// to; `go run ./bench -cpuprofile DIR` sets it for every run it measures
// (docs/performance.md). Unset, nothing is profiled.
const profileEnv = "IDEMSYNC_CPUPROFILE"

// withProfile runs main, under a CPU profile when profileEnv is set, and
// returns its exit code.
func withProfile(main func() int) int {
	path := os.Getenv(profileEnv)
	if path == "" {
		return main()
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %s=%s: %v\n", profileEnv, path, err)
		return 2
	}
	code := main()
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "error: %s=%s: %v\n", profileEnv, path, err)
	}
	return code
}
