package sync

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// A cancelled context (a signal) mid-walk ends the run interrupted, with
// the checkpoint at the last committed page: the page in flight is not
// committed, and resuming fetches it and goes on to the end.
func TestEngineCancelledMidWalk(t *testing.T) {
	rig := newEngineRig()
	job := engineJob(t, "", cursorStyle)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serve := cursorAPI(10, 3)
	src := &fakeSource{records: "data", serve: func(ctx context.Context, u *url.URL) (string, error) {
		if u.Query().Get("after") == "7" { // the third page: the signal arrives while it is fetched
			// Once page 2 (at cursor 4) is committed: page 3 is fetched
			// while page 2 is still mapped (pipeline.go, mapStage).
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if slices.ContainsFunc(rig.trace.all(), func(e string) bool { return strings.Contains(e, `"cursor":"4"`) }) {
					break
				}
			}
			cancel()
			<-ctx.Done()
			return "", ctx.Err()
		}
		return serve(ctx, u)
	}}
	res, err := rig.engine(job, src).Run(ctx, Options{})
	if !errors.Is(err, contract.ErrInterrupted) || res.Status != contract.RunInterrupted {
		t.Fatalf("run: %+v, %v; want interrupted", res, err)
	}
	run := rig.store.lastRun()
	if run.Status != contract.RunInterrupted || run.Pages != 2 || run.Checkpoint != (paging.Position{At: paging.CursorAt{Cursor: "7"}}).Encode() {
		t.Errorf("run %+v: want interrupted after 2 pages with the checkpoint at cursor 7", run)
	}
	if n := rig.sink.count(); n != 6 {
		t.Errorf("%d rows in the target, want the 6 of the committed pages", n)
	}

	src2 := &fakeSource{records: "data", serve: cursorAPI(10, 3)}
	res, err = rig.engine(job, src2).Run(context.Background(), Options{Resume: true})
	if err != nil || res.Status != contract.RunCompleted || !res.Resumed || res.RunID != run.ID {
		t.Fatalf("resume: %+v, %v; want run %d completed", res, err, run.ID)
	}
	if got := src2.requests(); len(got) != 2 || !strings.Contains(got[0], "after=7") {
		t.Errorf("resume requested %q; want cursor 7 then 10", got)
	}
	if n := rig.sink.count(); n != 10 || res.Pages != 4 || res.Records != 10 {
		t.Errorf("%d rows, result %+v: want 10 rows over 4 pages", n, res)
	}
}

// contradictingAPI serves 6 records in pages of 2 with total_pages 3;
// the first `short` answers for page 2 hold one record only: a short page
// that total_pages and page 3 contradict.
func contradictingAPI(short int) func(context.Context, *url.URL) (string, error) {
	var mu gosync.Mutex
	serve := pagesAPI(6)
	return func(ctx context.Context, u *url.URL) (string, error) {
		body, err := serve(ctx, u)
		if u.Query().Get("page") == "2" {
			mu.Lock()
			if short > 0 {
				short--
				body = `{"data":[{"id":3}]}`
			}
			mu.Unlock()
		}
		return strings.Replace(body, `{"data"`, `{"tp":3,"data"`, 1), err
	}
}

// A short page that other evidence contradicts is no end and no step
// forward: it is fetched again (up to retry.attempts), and when it keeps
// contradicting itself the run fails transient with nothing past it
// committed.
func TestEngineContradictedShortPageIsFetchedAgain(t *testing.T) {
	pag := pageStyle + "  total_pages: tp\n"
	t.Run("then whole", func(t *testing.T) {
		rig := newEngineRig()
		src := &fakeSource{records: "data", serve: contradictingAPI(1)}
		res, err := rig.engine(engineJob(t, "", pag), src).Run(context.Background(), Options{})
		if err != nil || res.Status != contract.RunCompleted {
			t.Fatalf("run: %+v, %v", res, err)
		}
		var page2 int
		for _, u := range src.requests() {
			if strings.Contains(u, "?page=2&") {
				page2++
			}
		}
		if page2 != 2 {
			t.Errorf("page 2 requested %d times, want 2: %q", page2, src.requests())
		}
		if n := rig.sink.count(); n != 6 || res.Pages != 3 {
			t.Errorf("%d rows over %d pages, want 6 over 3", n, res.Pages)
		}
		if !strings.Contains(rig.logs.String(), "end of pagination contradicted") {
			t.Errorf("no warning about the contradiction:\n%s", rig.logs)
		}
	})
	t.Run("always short", func(t *testing.T) {
		rig := newEngineRig()
		src := &fakeSource{records: "data", serve: contradictingAPI(1000)}
		res, err := rig.engine(engineJob(t, "", pag), src).Run(context.Background(), Options{})
		if contract.ClassOf(err) != contract.Transient || res.Status != contract.RunFailed || !strings.Contains(err.Error(), "page 2 is short (1 of 2 records)") {
			t.Fatalf("run: %+v, %v (%v); want %v naming the short page", res, err, contract.ClassOf(err), contract.Transient)
		}
		if run := rig.store.lastRun(); run.Pages != 1 || run.Checkpoint != (paging.Position{At: paging.PageAt{Page: 2}}).Encode() || rig.sink.count() != 2 {
			t.Errorf("run %+v with %d rows: want 1 page committed, checkpoint at page 2", run, rig.sink.count())
		}
	})
}

// An API that ignores the page parameter serves the same page again: the
// run fails before writing it. A cursor that comes back is a loop.
func TestEngineRefusesLoops(t *testing.T) {
	for _, tt := range []struct {
		name, pag string
		serve     func(context.Context, *url.URL) (string, error)
		says      string
		next      string // the checkpoint after the one committed page
		pages     int64
	}{
		{"page repeats the previous", pageStyle, func(_ context.Context, u *url.URL) (string, error) {
			if u.Query().Get("page") == "4" {
				return `{"data":[]}`, nil // ends a walk that did not notice
			}
			return `{"data":[{"id":1},{"id":2}]}`, nil
		}, "page 2 repeats the previous page", paging.Position{At: paging.PageAt{Page: 2}}.Encode(), 1},
		{"cursor comes back", cursorStyle, func(_ context.Context, u *url.URL) (string, error) {
			next := map[string]string{"": "x", "x": "y", "y": "x"}[u.Query().Get("after")]
			return `{"data":[{"id":` + map[string]string{"x": "2", "y": "3"}[next] + `}],"next":"` + next + `"}`, nil
		}, "pagination loop: cursor x came back a second time", paging.Position{At: paging.CursorAt{Cursor: "y"}}.Encode(), 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rig := newEngineRig()
			src := &fakeSource{records: "data", serve: tt.serve}
			res, err := rig.engine(engineJob(t, "", tt.pag), src).Run(context.Background(), Options{})
			if contract.ClassOf(err) != contract.Permanent || res.Status != contract.RunFailed || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("run: %+v, %v; want exit %d saying %q", res, err, contract.Permanent, tt.says)
			}
			run := rig.store.lastRun()
			if run.Status != contract.RunFailed || run.Pages != tt.pages || run.Checkpoint != tt.next {
				t.Errorf("run %+v: want failed after %d page(s) with the checkpoint at %s", run, tt.pages, tt.next)
			}
			if ups := slices.DeleteFunc(rig.trace.all(), func(e string) bool { return !strings.HasPrefix(e, "upsert") }); int64(len(ups)) != tt.pages {
				t.Errorf("upserts %q: the repeated page was written", ups)
			}
		})
	}
}
