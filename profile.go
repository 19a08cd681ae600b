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
// returns its exit code. Beside the CPU profile it writes the profile of
// the invocation's allocations (PATH.allocs: `go tool pprof
// -sample_index=alloc_space`), what the garbage collector's share comes
// from.
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
	if err := writeAllocs(path + ".allocs"); err != nil {
		fmt.Fprintf(os.Stderr, "error: %s=%s: %v\n", profileEnv, path, err)
	}
	return code
}

// writeAllocs writes the profile of every allocation so far to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
