package e2e

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A process out of file descriptors (a low `ulimit -n`) gets from SQLite
// only "unable to open database file (14)", as for a file it may not
// write. The state file and its folder are writable here, so the hint
// must not say to make them writable: it says the process is probably out
// of file descriptors, and names the limit (docs/operations.md, "The
// state file"); so does a target file's (docs/operations.md, "The target
// file"). The limits tried span where each open fails first.
func TestOutOfDescriptorsHint(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ulimit -n through bash")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	_, apiURL := startAPI(t, fakeapi.Options{Records: 10})
	var state, target int
	for n := 8; n <= 24; n++ {
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", styleJob("page", apiURL, "sqlite:out.db"))
		c := exec.Command(bash, "-c", fmt.Sprintf("ulimit -n %d; exec %q run %q --state %q", n, binary, job, filepath.Join(dir, "state.db")))
		c.Dir, c.Env = dir, cleanEnv()
		var errOut bytes.Buffer
		c.Stderr = &errOut
		_ = c.Run()
		stderr := errOut.String()
		if !strings.Contains(stderr, "unable to open database file") {
			continue
		}
		switch {
		case strings.Contains(stderr, "error: state file"):
			state++
		case strings.Contains(stderr, "(sqlite "):
			target++
		}
		if strings.Contains(stderr, "writable by this user") || !strings.Contains(stderr, "out of file descriptors") ||
			!strings.Contains(stderr, fmt.Sprintf("now %d", n)) {
			t.Errorf("ulimit -n %d: the hint does not say the process is out of file descriptors:\n%s", n, stderr)
		}
	}
	if state == 0 {
		t.Fatal("no limit tried made the state file fail to open: the test tried nothing")
	}
	t.Logf("state file failures %d, target file failures %d", state, target)
}
