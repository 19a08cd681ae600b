package sync

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// A run stopped right after a parent completed, when the next parent was
// already read (the checkpoint names no parent in flight), resumes after
// that next parent left the parent table: the walk has no parent left and
// completes; it must not wait for a page no parent will fetch.
func TestFanOutResumesWithNoParentLeft(t *testing.T) {
	// One parent at a time: with more, the next parent starts at once.
	const conc = 1

	rig, fs := newFanRig(1, 2)
	job := childJob(t, "", "", conc)
	serve := itemsAPI(map[string]int{"1": 1, "2": 1})
	res, err := rig.fanEngine(job, &fakeSource{records: "data", serve: serve}, fs).Run(context.Background(), Options{MaxPages: 1})
	if err != nil || res.Status != contract.RunPartial {
		t.Fatalf("fanout %d: first run %+v, %v; want partial", conc, res, err)
	}
	p, err := paging.DecodePosition(paging.StylePage, rig.store.lastRun().Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	ws := p.Windows()
	if p.Win != 1 || ws.Started != 1 || len(ws.Rows) != 0 {
		t.Fatalf("fanout %d: checkpoint %+v %+v (%v); want parent 1 done and none in flight", conc, p, ws, err)
	}
	fs.pmu.Lock()
	fs.parents = fs.parents[:1] // parent 2 removed from the parent table
	fs.pmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	res, err = rig.fanEngine(job, &fakeSource{records: "data", serve: serve}, fs).Run(ctx, Options{})
	cancel()
	if err != nil || res.Status != contract.RunCompleted {
		t.Fatalf("fanout %d: resumed run %+v, %v; want completed (interrupted: it hung)", conc, res, err)
	}
	if got := childRows(rig.sink); !slices.Equal(got, []string{"1/1"}) {
		t.Errorf("fanout %d: rows %q", conc, got)
	}
}
