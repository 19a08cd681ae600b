package sync

import (
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// A page or offset walk with pagination.total ends when the records it
// counted reach the total (endproof.go). A page that silently omits a
// record shifts the next position: the next page repeats a record, and the
// count reaches the total with one record never served. So the walk's end
// is checked against the total in distinct keys: a walk whose distinct
// records fall short of it is not proven complete. The run then fails as
// transient (exit 3) and is left abandoned, so the next run walks the list
// again from its first page instead of re-reading the same last page
// (docs/pagination.md, "Counts compare distinct keys").

// walkKeys is the distinct-key count of the page or offset walk in
// progress in this invocation.
type walkKeys struct {
	seed maphash.Seed
	// prev holds the hashes of the keys of the walk's previous page: a
	// page that omits records shifts the next position back by as many,
	// so the next page repeats them. Only one page is held, so memory
	// stays bounded on a walk of any length (a run that sweeps checks
	// every key of the pass: checkPassDistinct).
	prev    map[uint64]bool
	parent  string // the parent row whose walk it is (a child's)
	repeats int64  // records whose key the walk had read already
	// rewalk is set when the walk fell short: the run is abandoned.
	rewalk bool
	// end, when set, is the walk's last page as committed in this
	// invocation: the records it counted (seen) and pagination.total.
	end                 bool
	endSeen, endTotal   int64
	endWhere, totalName string
}

// countsDistinct reports whether the job's walk ends on a count that
// distinct keys must reach: a page or offset walk with pagination.total.
func (e *Engine) countsDistinct(rs *runState) bool {
	return rs.info.Kind == contract.KindRun && e.shiftable() && e.Job.Pagination.Total != ""
}

// checkDistinct counts the keys of a page's rows that the page before it
// (or the page itself) held already and, on the walk's last page, fails
// with Transient when the records the walk counted toward
// pagination.total, less those read twice, fall short of the total. A walk
// starts over at the style's first position or a new parent; a pass
// continued by a later invocation counts from its first page there (for a
// run that sweeps, checkPassDistinct checks across the two).
//
// A child's parents and a windowed run's windows are walks of their own,
// whose pages are committed interleaved when several are in flight
// (fanout_concurrency, incremental.concurrency): each such walk is counted
// apart (rs.walks, by window), and checked at its own last page, not the
// run's.
func (e *Engine) checkDistinct(rs *runState, fp *fetched, rows []contract.Row, where string) error {
	if !e.countsDistinct(rs) {
		return nil
	}
	pg := &pager{job: e.Job}
	w := &rs.walk
	if fp.ckpt != nil { // a window's walk (windows.go)
		if rs.walks == nil {
			rs.walks = map[int]*walkKeys{}
		}
		if w = rs.walks[fp.pos.Win]; w == nil {
			w = &walkKeys{}
			rs.walks[fp.pos.Win] = w
		}
	}
	if st := pg.style().Start(e.Job.Pagination, ""); w.prev == nil || fp.parent != w.parent || paging.SameSpot(fp.pos.At, st) {
		*w = walkKeys{seed: maphash.MakeSeed(), prev: map[uint64]bool{}, parent: fp.parent}
	}
	cur := make(map[uint64]bool, len(rows))
	idx := keyColumns(&e.Job.Table)
	var b strings.Builder
	for _, r := range rows {
		b.Reset()
		for _, i := range idx {
			if i < len(r.Values) {
				fmt.Fprintf(&b, "%v\x00", r.Values[i])
			}
		}
		h := maphash.String(w.seed, b.String())
		if w.prev[h] || cur[h] {
			w.repeats++
		}
		cur[h] = true
	}
	w.prev = cur
	if !fp.next.End { // the end of this walk, not only of the run
		return nil
	}
	if w != &rs.walk {
		delete(rs.walks, fp.pos.Win)
	}
	tot := e.totalOf(fp)
	t, name := tot.n, tot.name
	seen, known := pg.seenThrough(fp.pos, fp.resp)
	if !tot.ok || !known {
		return nil
	}
	w.end, w.endSeen, w.endTotal, w.endWhere, w.totalName = true, seen, t, where, name
	if w != &rs.walk { // the last walk to end is the one checkPassDistinct reads
		rs.walk.end, rs.walk.endSeen, rs.walk.endTotal, rs.walk.endWhere, rs.walk.totalName = true, seen, t, where, name
	}
	return e.shortOfTotal(rs, w, w.repeats)
}

// shortOfTotal fails with Transient, and has the run abandoned, when
// the last page of the walk w, less repeats records read twice, falls
// short of pagination.total.
func (e *Engine) shortOfTotal(rs *runState, w *walkKeys, repeats int64) error {
	if repeats == 0 || w.endSeen-repeats >= w.endTotal {
		return nil
	}
	rs.walk.rewalk = true
	return &contract.Error{Class: contract.Transient,
		Msg: fmt.Sprintf("the %s walk ended at %s with %d distinct records, short of %s (%d): it read %d record(s) twice, so a page left a record out and the walk did not list every record",
			e.Job.Pagination.Style, w.endWhere, w.endSeen-repeats, w.totalName, w.endTotal, repeats),
		Hint: "the run is abandoned: the next run walks the list again from its first page"}
}

// checkPassDistinct repeats checkDistinct's test over every key the pass
// stored (a run that sweeps stores them; pk, read by readPassKeys), so that
// a shift across two invocations of one pass (a run continued after an
// exit) is caught too. Tombstones are not among the stored keys: only the
// keys read twice count, against the records the last page counted. An
// incomplete set voids the sweep instead (keysProve).
func (e *Engine) checkPassDistinct(rs *runState, pk passKeys) error {
	if !e.checksPassDistinct(rs) || !pk.complete {
		return nil
	}
	return e.shortOfTotal(rs, &rs.walk, pk.read-pk.distinct)
}

// checksPassDistinct reports whether checkPassDistinct checks the pass rs:
// a run that sweeps, on a page or offset walk with pagination.total whose
// last page this invocation committed. For a child job the pass spans many
// walks: each walk's own check stands.
func (e *Engine) checksPassDistinct(rs *runState) bool {
	return e.countsDistinct(rs) && e.sweeps(rs) && rs.walk.end && e.Job.Parent == nil
}

// keyColumns returns the indexes of the table's key columns in its
// columns.
func keyColumns(t *contract.Table) []int {
	var idx []int
	for _, k := range t.Key {
		for i, c := range t.Columns {
			if c.Name == k {
				idx = append(idx, i)
				break
			}
		}
	}
	return idx
}
