package cmd

import (
	"os"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/runner"
	idsync "github.com/idemsync/idemsync/sync"
)

// onHardExit, when set, prints what a command must print before a second
// SIGINT/SIGTERM ends the process at once (Main).
var onHardExit atomic.Pointer[func() int]

// hardExit runs onHardExit and exits with hardExitCode.
func hardExit() {
	os.Exit(hardExitCode())
}

// hardExitCode runs onHardExit and returns the exit code of the process:
// 130, or the exit code of the --json object the command already printed,
// so that stdout and the exit agree (docs/operations.md, "Signals").
func hardExitCode() int {
	if f := onHardExit.Load(); f != nil {
		return (*f)()
	}
	return exitInterrupted
}

// jsonGate lets exactly one JSON object reach stdout: the command's own,
// or the one printed when a second signal ends the process.
type jsonGate struct {
	mu   gosync.Mutex
	done bool
	code int // the exit code of the object printed
}

// write prints v unless an object was already printed.
func (g *jsonGate) write(ios *IOStreams, v any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.done {
		g.done = true
		switch r := v.(type) {
		case *idsync.Result:
			g.code = r.ExitCode
		case *runner.JobResult:
			g.code = r.ExitCode
		default:
			g.code = exitInterrupted
		}
		writeJSON(ios, v)
	}
}

// exit prints obj (the interrupted object) unless the command printed its
// own, and returns the exit code of the object printed. It holds the gate
// until the process exits.
func (g *jsonGate) exit(ios *IOStreams, obj func() any) int {
	g.mu.Lock() // held until the process exits
	if g.done {
		return g.code
	}
	writeJSON(ios, obj())
	return exitInterrupted
}

// armHardExit makes a second signal print, with --json, the full run
// object of what is known (job, run id, counts, checkpoint and saved mark
// of the pages committed so far) with status interrupted and exit code 130. It returns the
// OnPage hook that keeps that knowledge current and a function that
// disarms it.
func armHardExit(ios *IOStreams, gate *jsonGate, job *idsync.Job, kind string, started time.Time) (onPage func(idsync.PageEvent), disarm func()) {
	var last atomic.Pointer[idsync.PageEvent]
	f := func() int {
		return gate.exit(ios, func() any {
			res := &idsync.Result{Job: job.Name, Kind: kind, Status: contract.RunInterrupted, ExitCode: exitInterrupted,
				Error: "interrupted twice: stopped at once; the next run continues from the last committed page"}
			if ev := last.Load(); ev != nil {
				res.RunID, res.Pages, res.Records, res.Skipped = ev.RunID, ev.Pages, ev.RunRecords, ev.RunSkipped
				res.Checkpoint, res.HWM = ev.Checkpoint, ev.HWM
				res.Inserted, res.Updated, res.Unchanged = ev.Total.Inserted, ev.Total.Updated, ev.Total.Unchanged
			}
			res.DurationMS = time.Since(started).Milliseconds()
			return res
		})
	}
	onHardExit.Store(&f)
	return func(ev idsync.PageEvent) { last.Store(&ev) }, func() { onHardExit.CompareAndSwap(&f, nil) }
}

// armJobHardExit makes a second signal print, with --json, the result
// object of a job with several resources as far as m knows it (the
// resource in progress interrupted with the counts of its committed
// pages) and exit 130. It returns the function that disarms it.
func armJobHardExit(ios *IOStreams, gate *jsonGate, m *runner.Runner, red *idsync.Redactor) func() {
	f := func() int {
		return gate.exit(ios, func() any {
			return m.Interrupted(red.Redact("interrupted twice: stopped at once; the next run continues from the last committed page"))
		})
	}
	onHardExit.Store(&f)
	return func() { onHardExit.CompareAndSwap(&f, nil) }
}
