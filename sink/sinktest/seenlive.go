package sinktest

import (
	"errors"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// seenLive checks contract.SweepRequest.SeenLive: when the pass's distinct
// keys are as many as the table's live rows (an unchanged re-sync), the
// sweep counts instead of reading its keys and removes nothing; when they
// are fewer, it reads them and sweeps as before. Marked rows of a soft
// table are not live. A tally of the live rows by the pass
// (contract.SweepRequest.LiveTally) equal to SeenLive stands for the count.
func seenLive(t *testing.T, b *DB) {
	unread := func(func(string) error) error {
		t.Error("the sweep read its keys although every live row was seen")
		return errors.New("keys read")
	}
	for _, mode := range []string{contract.DeletesHard, contract.DeletesSoft} {
		s, tbl := sweepTable(t, b, mode, "a", "b", "c")
		req := sweepReq(t, s, tbl, mode, "a", "b", "c")
		req.Keys, req.SeenLive = unread, 3
		if res := mustSweep(t, s, tbl, req); res != (contract.SweepResult{}) {
			t.Errorf("%s: every live row seen: %+v, want nothing deleted or pending", mode, res)
		}
		// d is live and unseen: the count differs, the keys are read.
		MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, Row("d", "d", int64(1)))
		req = sweepReq(t, s, tbl, mode, "a", "b", "c")
		req.SeenLive = 3
		// The pass's tally of live rows counts d too: the sweep counts.
		req.LiveTally = 4
		if res := mustSweep(t, s, tbl, req); res.Deleted != 1 {
			t.Errorf("%s: a live row unseen: %+v, want it removed", mode, res)
		}
		if mode == contract.DeletesSoft {
			// d is marked now, so not live: a, b and c are every live row.
			req = sweepReq(t, s, tbl, mode, "a", "b", "c")
			req.Keys, req.SeenLive = unread, 3
			if res := mustSweep(t, s, tbl, req); res != (contract.SweepResult{}) {
				t.Errorf("soft, d marked: %+v, want nothing deleted or pending", res)
			}
		}
		// A tally equal to SeenLive stands for the count: the sweep
		// neither counts nor reads its keys. (A tally short of the table,
		// as here with e live, can only make the sweep remove less: e
		// stays, not even pending.)
		MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, Row("e", "e", int64(1)))
		req = sweepReq(t, s, tbl, mode, "a", "b", "c")
		req.Keys, req.SeenLive, req.LiveTally = unread, 3, 3
		if res := mustSweep(t, s, tbl, req); res != (contract.SweepResult{}) {
			t.Errorf("%s: tally equal to the distinct keys: %+v, want nothing deleted or pending", mode, res)
		}
		b.Exec(t, "DROP TABLE "+QName(tbl))
	}
}
