package cmd

import (
	gosync "sync"
	"time"

	idsync "github.com/idemsync/idemsync/sync"
)

// hardExitState is what a second signal reports of a job with several
// resources: the results so far and the resource in progress with its
// last committed page. It is safe for the signal's goroutine.
type hardExitState struct {
	mu   gosync.Mutex
	done []resourceResult
	cur  string
	ev   *idsync.PageEvent
}

// start names the resource in progress ("" between resources).
func (h *hardExitState) start(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur, h.ev = name, nil
}

// page records the latest event of the resource in progress.
func (h *hardExitState) page(ev idsync.PageEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ev = &ev
}

// set replaces the results so far.
func (h *hardExitState) set(rs []resourceResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = rs
}

// snapshot is the results so far in reporting order.
func (m *multiRun) snapshot() []resourceResult {
	out := make([]resourceResult, 0, len(m.order))
	for _, n := range m.order {
		out = append(out, *m.results[n])
	}
	return out
}

// armHardExit makes a second signal print, with --json, the job's result
// object as far as it is known, the resource in progress interrupted with
// the counts of its committed pages, and exit 130. It returns the function
// that disarms it.
func (m *multiRun) armHardExit(gate *jsonGate, red *idsync.Redactor) func() {
	h := &m.hardExit
	f := func() {
		h.mu.Lock()
		out := &jobResult{Job: m.jf.Name, Kind: m.opts.Kind, Status: idsync.RunInterrupted, ExitCode: exitInterrupted,
			Error:     red.Redact("interrupted twice: stopped at once; the next run continues from the last committed page"),
			Resources: append([]resourceResult{}, h.done...)}
		if h.cur != "" {
			for i, d := range out.Resources {
				if d.Resource == h.cur {
					out.Resources = append(out.Resources[:i:i], out.Resources[i+1:]...)
					break
				}
			}
			rr := resourceResult{Resource: h.cur, Result: idsync.Result{Job: m.jf.Name, Kind: m.opts.Kind,
				Status: idsync.RunInterrupted, ExitCode: exitInterrupted}}
			if ev := h.ev; ev != nil {
				rr.RunID, rr.Pages = ev.RunID, ev.Pages
				rr.Inserted, rr.Updated, rr.Unchanged = ev.Total.Inserted, ev.Total.Updated, ev.Total.Unchanged
			}
			out.Resources = append(out.Resources, rr)
		}
		h.mu.Unlock()
		out.DurationMS = time.Since(m.started).Milliseconds()
		gate.mu.Lock() // held until the process exits
		if !gate.done {
			writeJSON(m.ios, out)
		}
	}
	onHardExit.Store(&f)
	return func() { onHardExit.CompareAndSwap(&f, nil) }
}
