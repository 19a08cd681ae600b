// Command demo says what it is doing, then builds and runs the crash demo
// (examples/demo/crash). The first build compiles the pure-Go SQLite
// driver, which takes a minute or more on a fresh machine: `go run` of the
// demo itself would be silent all that time (issue 28). This launcher
// imports nothing but the standard library, so it starts within seconds
// and prints before the long build.
//
//	go run ./examples/demo
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

func main() {
	os.Exit(launch())
}

func launch() int {
	dir, err := demoDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "idemsync-demo-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "crash-demo")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	fmt.Println("==> building the demo and idemsync (first time: about a minute or two while the pure-Go SQLite driver compiles; then seconds)…")
	start := time.Now()
	build := exec.Command("go", "build", "-o", bin, "./crash")
	build.Dir, build.Stdout, build.Stderr = dir, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo: build failed:", err)
		return 1
	}
	fmt.Printf("==> built in %s\n", time.Since(start).Round(time.Second))
	run := exec.Command(bin)
	run.Stdin, run.Stdout, run.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := run.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	return 0
}

// demoDir is this command's folder, where ./crash is: the demo runs from
// the repository root or from here.
func demoDir() (string, error) {
	for _, d := range []string{filepath.Join("examples", "demo"), "."} {
		if _, err := os.Stat(filepath.Join(d, "crash", "main.go")); err == nil {
			return filepath.Abs(d)
		}
	}
	return "", errors.New("run it from the repository's root: go run ./examples/demo")
}
