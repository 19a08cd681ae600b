package sync

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/idemsync/idemsync/contract"
)

// passKeys is what one read of a full pass's seen keys tells the end of
// the pass: whether every page recorded its keys, how many keys the pages
// held, and how many distinct ones. The keys are compared by a 64-bit hash
// (8 bytes a key in memory, for as long as the read lasts): a collision
// counts two keys as one, which can only make the pass prove less
// (a page or offset walk reads it as a key read twice and skips its sweep)
// or its sweep remove less (contract.SweepRequest.SeenLive).
type passKeys struct {
	complete       bool
	read, distinct int64
}

// passHashes are the hashes of the keys of every page this invocation
// committed to the run, by seed, in page order (checkShift compares a
// page's with the page before it from the same hashes). For a pass that
// this invocation ran from its first page they are the whole pass's
// recorded keys, and its end need not read them back from the state
// file (readPassKeys).
type passHashes struct {
	seed   maphash.Seed
	hs     []uint64
	pages  int64 // pages hashed
	noKeys bool  // a page came without its keys (the state holds NULL for it)
}

// hashPage adds the keys of a page about to be committed to the run's
// hashes and returns the page's.
func (rs *runState) hashPage(keys []string) []uint64 {
	p := &rs.hashes
	if p.pages == 0 {
		p.seed = maphash.MakeSeed()
		// Sized for the rows the table held: grown from nothing, the
		// slice was copied some 17 times at 100,000 keys.
		p.hs = make([]uint64, 0, max(rs.info.LiveBefore, 0)+int64(len(keys)))
	}
	p.pages++
	if keys == nil {
		p.noKeys = true
		return nil
	}
	n := len(p.hs)
	for _, k := range keys {
		p.hs = append(p.hs, maphash.String(p.seed, k))
	}
	return p.hs[n:]
}

// readPassKeys counts the keys of every page committed to the run rs,
// once, for both users at the pass's end: checkPassDistinct (a key read
// twice across the pass's invocations) and the sweep (an incomplete set
// proves nothing; the distinct count lets the sink skip loading the keys
// when every live row was seen). When this invocation began the run and
// hashed every page it committed, those hashes are the run's keys;
// otherwise (a continued run, or a page hashed and not committed) the keys
// are read from the state file. The sweep reads them again only when a
// live row may have been missed.
func (e *Engine) readPassKeys(ctx context.Context, rs *runState) (passKeys, error) {
	var hs []uint64
	complete := true
	if h := &rs.hashes; !rs.resumed && h.pages == rs.pages && h.pages > 0 {
		hs, complete = h.hs, !h.noKeys
		h.hs = nil
	} else {
		seed := maphash.MakeSeed()
		hs = make([]uint64, 0, rs.records) // sized: see hashPage
		var err error
		complete, err = e.Store.SeenKeys(ctx, rs.info.ID, func(k string) error {
			hs = append(hs, maphash.String(seed, k))
			return nil
		})
		if err != nil {
			return passKeys{}, err
		}
	}
	slices.Sort(hs)
	pk := passKeys{complete: complete, read: int64(len(hs)), distinct: int64(len(hs))}
	for i := 1; i < len(hs); i++ {
		if hs[i] == hs[i-1] {
			pk.distinct--
		}
	}
	return pk, nil
}

// needsPassKeys reports whether finishPass reads the pass's keys: for a
// run that sweeps, when its sweep may run or checkPassDistinct checks them.
func (e *Engine) needsPassKeys(rs *runState) bool {
	return e.sweeps(rs) && (rs.proof.reason == "" || e.checksPassDistinct(rs))
}

// keysProve voids the proof of a pass whose keys cannot decide a deletion:
// a page committed without its keys, or, on a page or offset walk, a key
// read twice anywhere in the pass (also across invocations): the walk
// shifted, so a record it did not list may still exist, and the records it
// counted toward pagination.total are not all distinct.
func (e *Engine) keysProve(rs *runState, pk passKeys) bool {
	switch dup := pk.read - pk.distinct; {
	case !pk.complete:
		rs.noProof(incompleteKeys)
	case dup > 0 && e.shiftable():
		rs.noProof(fmt.Sprintf("the %s walk read %d key(s) twice: it shifted, so a record it did not list may still exist (%d distinct keys of %d read)",
			e.Job.Pagination.Style, dup, pk.distinct, pk.read))
	default:
		return true
	}
	return false
}

// seenLive is contract.SweepRequest.SeenLive for the pass rs whose keys
// are pk: the distinct keys, when each names a row the pass left live. A
// page's upsert leaves every row of the page live (a soft-deleted row whose
// key comes back is unmarked), and only a tombstone removes or marks a row
// during the pass (one writer per swept table, docs/deletions.md), so a
// pass that removed nothing so far qualifies; one that did gets 0.
func seenLive(rs *runState, pk passKeys) int64 {
	if rs.total.Deleted != 0 {
		return 0
	}
	return pk.distinct
}

// liveTally is contract.SweepRequest.LiveTally for the pass rs: the live
// rows it counted when it started plus the rows it inserted, when that is
// the table's live rows now (docs/deletions.md, "An unchanged re-sync
// counts"); 0 otherwise. It is when this invocation ran the pass from its
// start (a pass continued after a kill between a page's target commit
// and its checkpoint read that page again, and counted its new rows
// unchanged), the count is the pass's own (a pass after a refused sweep
// keeps the chain's), no tombstone of the pass removed or marked a row,
// and no write may have unmarked one (a soft row whose key comes back
// counts as updated, so a soft pass must update nothing).
func (e *Engine) liveTally(rs *runState) int64 {
	switch {
	case rs.resumed, rs.info.LiveBefore < 0, !rs.info.RefusedSince.IsZero(), rs.total.Deleted != 0,
		e.Job.Target.Deletes == contract.DeletesSoft && rs.total.Updated != 0:
		return 0
	}
	return rs.info.LiveBefore + rs.total.Inserted
}
