package runner

import (
	gosync "sync"
	"time"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

// live is what Interrupted reports while the runner runs: the results so
// far and the resource in progress with its last committed page. It is
// safe for a signal's goroutine.
type live struct {
	mu   gosync.Mutex
	done []ResourceResult
	cur  string
	ev   *idsync.PageEvent
}

// start names the resource in progress ("" between resources).
func (h *live) start(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur, h.ev = name, nil
}

// page records the latest event of the resource in progress.
func (h *live) page(ev idsync.PageEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ev = &ev
}

// set replaces the results so far.
func (h *live) set(rs []ResourceResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = rs
}

// snapshot is the results so far in reporting order.
func (m *Runner) snapshot() []ResourceResult {
	out := make([]ResourceResult, 0, len(m.order))
	for _, n := range m.order {
		out = append(out, *m.results[n])
	}
	return out
}

// Interrupted is the job's result as far as it is known when the process
// must stop at once (a second signal): the results so far, the resource
// in progress interrupted with the counts of its committed pages, status
// interrupted and exit 130, with msg as its error. It may be called from
// any goroutine, before, during or after Run.
func (m *Runner) Interrupted(msg string) *JobResult {
	h := &m.live
	h.mu.Lock()
	out := &JobResult{Job: m.File.Name, Kind: m.Options.Kind, Status: contract.RunInterrupted, ExitCode: m.Code(contract.Interrupted), Class: contract.Interrupted,
		Error: msg, Resources: append([]ResourceResult{}, h.done...)}
	if h.cur != "" {
		for i, d := range out.Resources {
			if d.Resource == h.cur {
				out.Resources = append(out.Resources[:i:i], out.Resources[i+1:]...)
				break
			}
		}
		rr := ResourceResult{Resource: h.cur, Result: idsync.Result{Job: m.File.Name, Kind: m.Options.Kind,
			Status: contract.RunInterrupted, ExitCode: m.Code(contract.Interrupted)}, Class: contract.Interrupted}
		if ev := h.ev; ev != nil {
			rr.RunID, rr.Pages, rr.Records, rr.Skipped = ev.RunID, ev.Pages, ev.RunRecords, ev.RunSkipped
			rr.Checkpoint, rr.HWM = ev.Checkpoint, ev.HWM
			rr.Inserted, rr.Updated, rr.Unchanged = ev.Total.Inserted, ev.Total.Updated, ev.Total.Unchanged
		}
		out.Resources = append(out.Resources, rr)
	}
	h.mu.Unlock()
	out.DurationMS = time.Since(m.Started).Milliseconds()
	return out
}
