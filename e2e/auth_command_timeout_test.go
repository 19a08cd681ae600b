package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// command auth under source.timeout when the command leaves a background
// process holding its standard output (docs/job-file.md, Auth): a command
// that prints its token and exits is not waited for beyond a moment, and a
// command that hangs is killed with its whole process group at the
// timeout. Either way the grandchild does not outlive the run.
func TestAuthCommandTimeoutKillsGroup(t *testing.T) {
	const tok = "cmd-canary-token-timeout-41"
	api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+tok {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		authPage(w, r)
	}))
	for _, tc := range []struct {
		name, tail string
		code       int
	}{
		{"prints and exits", "echo " + tok + "\n", 0},
		{"hangs", "wait\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "grandchild.pid")
			script := filepath.Join(dir, "token.sh")
			body := "#!/bin/sh\nsleep 30 &\necho $! > " + pidFile + "\n" + tc.tail
			if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
				t.Fatal(err)
			}
			job := authJob(api, fmt.Sprintf("    type: command\n    run: [%s]\n    ttl: 1h", script))
			writeJob(t, dir, "job.yaml", strings.Replace(job, "  records: data\n", "  records: data\n  timeout: 2s\n", 1))
			start := time.Now()
			r := idemsync(t, dir, nil, "run", "job.yaml")
			took := time.Since(start)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%s", r.code, tc.code, r.stderr)
			}
			// retry attempts: 2 of at most 2 s each, plus the binary's start.
			if took > 10*time.Second {
				t.Errorf("the run took %s with source.timeout 2s", took.Round(time.Second))
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			if processAlive(pid) {
				t.Errorf("the command's background process %d outlived the run", pid)
			}
		})
	}
}

// processAlive says whether pid is a live process (a zombie is not).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
