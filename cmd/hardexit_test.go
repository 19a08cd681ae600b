package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	idsync "github.com/idemsync/idemsync/sync"
)

// A second signal after the command printed its own --json object (a run
// that failed with exit 1 as the signal came) exits with that object's
// exit code, and prints nothing more: stdout and the exit agree
// (docs/operations.md, "Signals"). Before it printed it, the second
// signal prints the interrupted object and exits 130.
func TestHardExitAfterTheObjectKeepsItsCode(t *testing.T) {
	defer onHardExit.Store(nil)
	for _, printed := range []bool{false, true} {
		var out bytes.Buffer
		ios := &IOStreams{Out: &out, ErrOut: &out}
		gate := &jsonGate{}
		g := &globalOpts{json: true, gate: gate}
		job := &idsync.Job{}
		job.Name = "j"
		_, disarm := armHardExit(ios, gate, job, "run", time.Now())
		if printed {
			g.writeResult(ios, &idsync.Result{Job: "j", Status: "failed", ExitCode: 1})
		}
		code := hardExitCode()
		disarm()
		objects := strings.Count(out.String(), `"job":"j"`)
		switch {
		case printed && (code != 1 || objects != 1 || strings.Contains(out.String(), "interrupted")):
			t.Errorf("after the command's object (exit 1): exit %d, stdout %q; want 1 and that object alone", code, out.String())
		case !printed && (code != exitInterrupted || objects != 1 || !strings.Contains(out.String(), `"status":"interrupted"`)):
			t.Errorf("before any object: exit %d, stdout %q; want 130 and the interrupted object", code, out.String())
		}
		gate.mu.TryLock() // the hard exit holds it until the process exits
		gate.mu.Unlock()
	}
}
