package sync

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// The run's checkpoint holds every window in flight at its page and those
// completed out of order; the saved mark moves only over the contiguous
// prefix of completed windows; a checkpoint read back restores the same
// state, and a window started without a committed page starts again.
func TestWindowRunCheckpoint(t *testing.T) {
	job := testJob(t, "name: w\nsource: {url: 'http://api.test/x'}\npagination: {style: cursor, next: next}\n"+
		"incremental: {field: ts, param: since, end_param: until, step: 1d, concurrency: 3}\ntarget: {url: 'sqlite:x.db', table: t, key: [id]}\n")
	e := &Engine{Job: job}
	wins := []Window{{From: "d0", To: "d1"}, {From: "d1", To: "d2"}, {From: "d2", To: "d3"}, {From: "d3", To: "d4"}}
	w, err := newWindowRun(context.Background(), e, windowList(wins), paging.Position{})
	if err != nil {
		t.Fatal(err)
	}
	w.final = "start"
	w.pos[1], w.pos[2], w.next = e.windowStart(1), e.windowStart(2), 3
	page := func(k int, next paging.Position) string { return w.page(k, &fetched{next: next}) }
	if m := page(1, paging.Position{At: paging.CursorAt{Cursor: "b1"}}); m != "" {
		t.Errorf("a page inside window 2 moved the mark to %q", m)
	}
	if m := page(2, paging.Position{End: true}); m != "" {
		t.Errorf("window 3 completing before windows 1 and 2 moved the mark to %q", m)
	}
	if m := page(0, paging.Position{At: paging.CursorAt{Cursor: "a1"}}); m != "" {
		t.Errorf("mark %q", m)
	}
	ck := w.checkpoint()
	if ck.Win != 0 || ck.At != (paging.CursorAt{Cursor: "a1"}) || ck.End || ck.Fly == nil {
		t.Fatalf("checkpoint %+v, want window 1 at a1 with the others in flight", ck)
	}
	back, err := newWindowRun(context.Background(), e, windowList(wins), mustDecode(t, ck.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	if back.low != 0 || back.pos[0].At != (paging.CursorAt{Cursor: "a1"}) || back.pos[1].At != (paging.CursorAt{Cursor: "b1"}) || !back.done[2] || back.next != 3 {
		t.Fatalf("restored %+v, want window 1 at a1, 2 at b1, 3 done, 3 started", back)
	}
	if m := page(0, paging.Position{End: true}); m != "d1" {
		t.Errorf("window 1 completing: mark %q, want d1 (window 2 still in flight)", m)
	}
	if m := page(1, paging.Position{End: true}); m != "d3" {
		t.Errorf("window 2 completing: mark %q, want d3 (windows 1 to 3 complete)", m)
	}
	// Window 4 was never started: the checkpoint says 3 started, so a
	// restored run starts it fresh.
	ck = w.checkpoint()
	if ck.Win != 3 || ck.End {
		t.Fatalf("checkpoint %+v, want window 4 next", ck)
	}
	w.next = 4 // started, no page committed yet
	ck = w.checkpoint()
	back, err = newWindowRun(context.Background(), e, windowList(wins), mustDecode(t, ck.Encode()))
	if err != nil || back.pos[3] != e.windowStart(3) {
		t.Fatalf("restored %+v (%v), want window 4 from its first page", back, err)
	}
	m := page(3, paging.Position{End: true})
	if err := w.settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m != "start" || !w.checkpoint().End {
		t.Errorf("last window: mark %q, checkpoint %+v, want the run's start (rounded down) and the end", m, w.checkpoint())
	}
}

func mustDecode(t *testing.T, s string) paging.Position {
	t.Helper()
	p, err := paging.DecodePosition("", s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A windowed run with four windows in flight (run under -race in CI):
// every record lands once, every window's pages are committed in order,
// and the run's saved mark is its start, rounded down.
func TestEngineWindowsInFlight(t *testing.T) {
	base := time.Now().UTC().Truncate(time.Second)
	const n = 60 // one record an hour back from base
	mark := func(id int) time.Time { return base.Add(-time.Duration(id) * time.Hour) }
	serve := func(_ context.Context, u *url.URL) (string, error) {
		q := u.Query()
		since, err1 := time.Parse(time.RFC3339, q.Get("since"))
		until, err2 := time.Parse(time.RFC3339, q.Get("until"))
		if err1 != nil || err2 != nil {
			return "", fmt.Errorf("bad window %q", u.RawQuery)
		}
		after, _ := strconv.Atoi(q.Get("after"))
		var ids []string
		next := "null"
		for id := after + 1; id <= n; id++ {
			if m := mark(id); !m.Before(since) && m.Before(until) {
				if len(ids) == 3 {
					next = strconv.Itoa(id - 1)
					break
				}
				ids = append(ids, fmt.Sprintf(`{"id":%d}`, id))
			}
		}
		return fmt.Sprintf(`{"data":[%s],"next":%s}`, strings.Join(ids, ","), next), nil
	}
	spec := fmt.Sprintf("name: w\nsource: {url: 'http://api.test/items', records: data}\npagination: {style: cursor, next: next, param: after}\n"+
		"incremental: {field: ts, param: since, end_param: until, step: 6h, concurrency: 4, initial: '%s'}\n"+
		"target: {url: 'sqlite:x.db', table: t, key: [id], columns: {id: {path: id, type: integer}}}\n", base.Add(-61*time.Hour).Format(time.RFC3339))
	rig := newEngineRig()
	src := &fakeSource{records: "data", serve: serve}
	res, err := rig.engine(testJob(t, spec), src).Run(context.Background(), Options{})
	if err != nil || res.Status != contract.RunCompleted || res.Inserted != n {
		t.Fatalf("run: %+v, %v; want completed with %d inserted", res, err, n)
	}
	js, _ := rig.store.Job(context.Background(), "w")
	if at, err := time.Parse(time.RFC3339, js.HWM); err != nil || at.After(time.Now()) || at.Before(base) {
		t.Errorf("saved mark %q, want the run's start rounded down", js.HWM)
	}
	windows := map[string]int{}
	for _, u := range src.urls {
		pu, _ := url.Parse(u)
		windows[pu.Query().Get("since")]++
	}
	if len(windows) < 10 {
		t.Errorf("%d windows requested, want 11 of 6h over 61h", len(windows))
	}
}

// When the lowest window not completed has not started yet, the
// checkpoint is its first page: page 1 for page style, never the zero
// position (page 0).
func TestWindowRunCheckpointOfUnstartedWindow(t *testing.T) {
	job := testJob(t, "name: w\nsource: {url: 'http://api.test/x'}\npagination: {style: page, size: 2, size_param: n}\n"+
		"incremental: {field: ts, param: since, end_param: until, step: 1d}\ntarget: {url: 'sqlite:x.db', table: t, key: [id]}\n")
	e := &Engine{Job: job}
	w, err := newWindowRun(context.Background(), e, windowList{{From: "d0", To: "d1"}, {From: "d1", To: "d2"}}, e.windowStart(0))
	if err != nil {
		t.Fatal(err)
	}
	w.page(0, &fetched{next: paging.Position{At: paging.PageAt{Page: 2}, End: true}})
	if got := w.checkpoint(); got.Win != 1 || got.At != (paging.PageAt{Page: 1}) || got.End {
		t.Errorf("checkpoint %+v, want window 2 at page 1", got)
	}
}
