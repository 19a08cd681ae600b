package sync

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// Which new runs are full passes (docs/deletions.md, "Full passes"): every run
// of a job that starts from the first page; for incremental, hwm and continue:
// true jobs only under --full, full_every or after a refused sweep; never a
// replay.
func TestFullPassDecision(t *testing.T) {
	page := "  style: page\n  size_param: per_page\n  size: 10\n"
	inc := "incremental:\n  field: updated_at\n  param: since\n"
	every := inc + "  full_every: 24h\n"
	hwm := "  style: hwm\n  field: updated_at\n  param: since\n  size_param: limit\n  size: 10\n"
	old, recent := time.Now().Add(-25*time.Hour), time.Now().Add(-time.Hour)
	for _, tc := range []struct {
		name, pag, extra string
		o                Options
		js               contract.JobState
		want             bool
	}{
		{"page", page, "", Options{Kind: contract.KindRun}, contract.JobState{}, true},
		{"page replay", page, "", Options{Kind: contract.KindReplay}, contract.JobState{}, false},
		{"continue", page + "  continue: true\n", "", Options{Kind: contract.KindRun}, contract.JobState{}, false},
		{"continue --full", page + "  continue: true\n", "", Options{Kind: contract.KindRun, Full: true}, contract.JobState{}, true},
		{"incremental", page, inc, Options{Kind: contract.KindRun}, contract.JobState{}, false},
		{"incremental --full", page, inc, Options{Kind: contract.KindRun, Full: true}, contract.JobState{}, true},
		{"incremental refused sweep", page, inc, Options{Kind: contract.KindRun}, contract.JobState{FullDue: true}, true},
		{"full_every, never a pass", page, every, Options{Kind: contract.KindRun}, contract.JobState{}, true},
		{"full_every, recent pass", page, every, Options{Kind: contract.KindRun}, contract.JobState{FullPassAt: recent}, false},
		{"full_every, old pass", page, every, Options{Kind: contract.KindRun}, contract.JobState{FullPassAt: old}, true},
		{"full_every replay", page, every, Options{Kind: contract.KindReplay}, contract.JobState{FullPassAt: old}, false},
		{"hwm", hwm, "", Options{Kind: contract.KindRun}, contract.JobState{}, false},
		{"hwm --full", hwm, "", Options{Kind: contract.KindRun, Full: true}, contract.JobState{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := engineJob(t, "", tc.pag+tc.extra)
			e := newEngineRig().engine(job, nil)
			if got, why := e.fullPass(tc.o, &tc.js); got != tc.want {
				t.Errorf("full pass %v (%q), want %v", got, why, tc.want)
			}
		})
	}
}

// A refused sweep's error names the numbers and the command that allows
// it, and is found by errors.Is; shares at the limit pass. The base is the
// live rows before the pass: a swap of every row is 100%, not 50%.
func TestCheckSweepRatio(t *testing.T) {
	tbl := &contract.Table{Name: "orders"}
	req := func(before int64, ratio float64, allow bool) contract.SweepRequest {
		return contract.SweepRequest{LiveBefore: before, MaxRatio: ratio, Allow: allow, AllowCommand: "idemsync run shop.yaml --resource orders --allow-mass-delete"}
	}
	if err := contract.CheckSweepRatio(tbl, 500, 1000, req(1000, 0.5, false)); err != nil {
		t.Errorf("exactly the ratio refused: %v", err)
	}
	err := contract.CheckSweepRatio(tbl, 950, 1000, req(1000, 0.5, false))
	want := "table orders: sweep would delete 950 of the 1000 rows the table held before the pass (95%) > max_delete_ratio 0.5; to allow it once: idemsync run shop.yaml --resource orders --allow-mass-delete"
	if err == nil || err.Error() != want || contract.ClassOf(err) != contract.Permanent || !errors.Is(err, contract.ErrSweepRefused) {
		t.Errorf("got %v (%v), want %q, exit 1, ErrSweepRefused", err, contract.ClassOf(err), want)
	}
	if err := contract.CheckSweepRatio(tbl, 950, 1000, req(1000, 0.5, true)); err != nil {
		t.Errorf("--allow-mass-delete refused: %v", err)
	}
	if err := contract.CheckSweepRatio(tbl, 1, 1000, req(1000, 0, false)); err == nil || !errors.Is(err, contract.ErrSweepRefused) {
		t.Errorf("ratio 0 let a deletion pass: %v", err)
	}
	if err := contract.CheckSweepRatio(tbl, 1, 300, req(300, 0.001, false)); err == nil || !strings.Contains(err.Error(), "(<1%)") {
		t.Errorf("a share under 1%% is not written <1%%: %v", err)
	}
	// Ids 1-10 became 101-110: 10 deleted of the 20 live at the sweep, but
	// of the 10 live before the pass.
	if err := contract.CheckSweepRatio(tbl, 10, 20, req(10, 0.5, false)); err == nil || !strings.Contains(err.Error(), "10 of the 10 rows") {
		t.Errorf("a swap of every row passed: %v", err)
	}
	// Unknown base (a pass begun by an older idemsync): live at the sweep
	// less the pass's inserts.
	old := req(-1, 0.5, false)
	old.Inserted = 10
	if err := contract.CheckSweepRatio(tbl, 10, 20, old); err == nil || !strings.Contains(err.Error(), "10 of the 10 rows") {
		t.Errorf("the estimated base is not live less inserted: %v", err)
	}
	// Rows that appeared during the pass (none before): over 100%.
	if err := contract.CheckSweepRatio(tbl, 3, 3, req(0, 0.5, false)); err == nil || !strings.Contains(err.Error(), "(>100%)") {
		t.Errorf("a deletion from an empty base passed: %v", err)
	}
	if err := contract.CheckSweepRatio(tbl, 3, 3, req(0, 1, false)); err != nil {
		t.Errorf("max_delete_ratio 1 refused: %v", err)
	}
}
