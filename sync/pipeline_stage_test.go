package sync

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// stallSink is memSink with a row check (contract.RowValidator) that calls
// check for every row the mapping validates.
type stallSink struct {
	*memSink
	check func(contract.Row)
}

func (s *stallSink) CheckRow(_ *contract.Table, r contract.Row) error {
	if r.Values != nil {
		s.check(r)
	}
	return nil
}

// A sequential walk maps page N while it fetches page N+1: the mapping
// (columns, conversion, hash) is a stage of its own between fetching and
// committing, so the fetch-only ceiling's share of a page and the mapping's
// overlap (docs/performance.md, "Round five"). Failed first: page 2 was
// requested only after page 1's mapping had waited 3 s for it.
func TestSequentialMapsWhileFetchingNext(t *testing.T) {
	rig := newEngineRig()
	second := make(chan struct{})
	api := cursorAPI(6, 3)
	src := &fakeSource{records: "data", serve: func(ctx context.Context, u *url.URL) (string, error) {
		if u.Query().Get("after") == "4" {
			select {
			case <-second:
			default:
				close(second)
			}
		}
		return api(ctx, u)
	}}
	overlapped := false
	sink := &stallSink{memSink: rig.sink, check: func(r contract.Row) {
		if r.Values[0] != int64(1) {
			return
		}
		select { // page 1's first row waits for page 2's request
		case <-second:
			overlapped = true
		case <-time.After(3 * time.Second):
		}
	}}
	e := rig.engine(engineJob(t, "", cursorStyle), src)
	e.OpenSink = func(context.Context) (contract.Sink, error) { return sink, nil }
	res, err := e.Run(context.Background(), Options{})
	if err != nil || res.Status != contract.RunCompleted || res.Inserted != 6 {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if !overlapped {
		t.Errorf("page 2 was not requested while page 1 was being mapped")
	}
}
