package sync

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemsync/idemsync/sync/paging"
)

// A sweep may remove or mark a row only when its full pass proves the
// record gone (docs/deletions.md, "What proves absence"). Any part of the
// engine that sees something voiding that proof calls runState.noProof
// with the reason; the pass then ends with its sweep skipped: it deletes
// nothing, the run's result says `sweep: skipped (REASON)`, status shows
// it and the metrics count it. The reason is stored with the run before
// the page that found it is committed, so a pass continued by a later
// invocation, after any exit, skips its sweep too.

// proofState is what voids the proof of the pass in progress.
type proofState struct {
	reason string // the first reason found ("" while the pass proves)
	saved  bool   // reason is in the state file (RunInfo.SweepSkipped)
	// prev holds, for each walk in progress (by its parent row: "" but
	// for a child's, whose parents' pages are committed interleaved under
	// fanout_concurrency), the hashes (runState.hashes) of the keys of its
	// last committed page of a page or offset walk, to see a shift as it
	// happens (see checkShift); next is the map the following page fills,
	// and the two are swapped, so a walk of any length allocates them once.
	prev map[string]map[uint64]struct{}
	next map[uint64]struct{}
	// total is, for each walk in progress (by parent row, as prev), the
	// pagination.total of its last committed page of a page or offset
	// walk in this invocation (checkTotal).
	total map[string]int64
}

// noProof records that the pass cannot prove the absence of the rows it
// did not see, and why (in words for the operator, naming where). The
// first reason stays; the sweep at the pass's end does nothing. It is the
// one entry point for every such finding.
func (rs *runState) noProof(reason string) {
	if rs.proof.reason == "" && reason != "" {
		rs.proof.reason, rs.proof.saved = reason, false
	}
}

// saveNoProof stores the pass's reason with its run when it is not stored
// yet (only for a run that sweeps: for any other, nothing depends on it).
func (e *Engine) saveNoProof(ctx context.Context, rs *runState) error {
	if rs.proof.reason == "" || rs.proof.saved || rs.info == nil || !e.sweeps(rs) {
		return nil
	}
	if err := e.Store.SkipSweep(ctx, rs.info.ID, e.Job.Secrets.Redact(rs.proof.reason)); err != nil {
		return err
	}
	rs.proof.saved = true
	return nil
}

// shiftable reports whether the job walks by page numbers or offsets: a
// record added or lost before the walk's position shifts the records
// after it, and a shift reads one record twice and may skip another.
func (e *Engine) shiftable() bool {
	_, ok := paging.Of(e.Job.Pagination.Style).(paging.Numbered)
	return ok
}

// checkShift voids the proof of a page or offset walk whose page holds a
// key the previous committed page of the same walk (for a child: of the
// same parent, parent) held: the walk shifted (a page omitted a
// record, or one was added before the position), and the record it pushed
// past a page boundary may not have been listed at all. keys are the
// page's, as hashes (runState.hashPage; nil when the run does not
// sweep): a collision reads as a key read twice, which can only make the
// pass prove less. The whole pass's keys are checked again before the
// sweep (keysProve): this check sees the common shift at once, so that
// even an unfinished run says so.
func (e *Engine) checkShift(rs *runState, keys []uint64, parent string, end bool, where string) {
	if keys == nil || !e.shiftable() {
		return
	}
	p := &rs.proof
	if p.prev == nil {
		p.prev = map[string]map[uint64]struct{}{}
	}
	prev, next := p.prev[parent], p.next
	if next == nil {
		next = make(map[uint64]struct{}, len(keys))
	}
	clear(next)
	n := 0
	for _, h := range keys {
		if _, ok := prev[h]; ok {
			n++
		}
		next[h] = struct{}{}
	}
	if n > 0 {
		rs.noProof(fmt.Sprintf("the %s walk read %d key(s) twice (%s repeats the page before it): it shifted, so a record it did not list may still exist",
			e.Job.Pagination.Style, n, where))
	}
	if end { // the parent's walk is over: nothing follows its page
		delete(p.prev, parent)
		p.next = next
		return
	}
	p.prev[parent], p.next = next, prev
}

// checkTotal voids the proof of a page or offset walk whose
// pagination.total went down between two of its pages: a record before the
// walk's position was removed, which shifts the records after it back by
// one, and the one pushed back across a page already read is listed by no
// page, though it exists. (A growing total shifts records forward: that
// reads one twice, which checkShift sees.) Only the pages of one
// invocation are compared, and for a child only those of one parent's walk
// (parent is the page's parent row), whatever pages of other parents were
// committed between them.
func (e *Engine) checkTotal(rs *runState, keys []string, fp *fetched, where string) {
	if keys == nil || !e.shiftable() {
		return
	}
	tot := e.totalOf(fp)
	t, name, parent := tot.n, tot.name, fp.parent
	if !tot.ok {
		return
	}
	p := &rs.proof
	if last, ok := p.total[parent]; ok && t < last {
		rs.noProof(fmt.Sprintf("%s went down from %d to %d during the %s walk (at %s): a record removed before its position shifted the rest, so a record it did not list may still exist",
			name, last, t, e.Job.Pagination.Style, where))
	}
	if fp.next.End { // the parent's walk is over: nothing follows its page
		delete(p.total, parent)
		return
	}
	if p.total == nil {
		p.total = map[string]int64{}
	}
	p.total[parent] = t
}

// totalOf is the pagination.total of the fetched page fp: the one its end
// decision read, else read from its response.
func (e *Engine) totalOf(fp *fetched) pageTotal {
	if fp.total != nil {
		return *fp.total
	}
	var t pageTotal
	t.n, t.name, t.ok = (&pager{job: e.Job}).total(fp.resp)
	return t
}

// errNoProof stops the loading of a sweep's keys: the sweep rolls back,
// removing nothing, and the reason goes to runState.noProof.
type errNoProof struct{ reason string }

func (e *errNoProof) Error() string { return e.reason }

// noProofOf returns the reason of an *errNoProof in err's chain.
func noProofOf(err error) (string, bool) {
	var np *errNoProof
	if errors.As(err, &np) {
		return np.reason, true
	}
	return "", false
}
