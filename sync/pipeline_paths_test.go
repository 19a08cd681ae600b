package sync

import (
	"context"
	"errors"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// The sequential walk's stages (pipeline.go: fetch → mapStage → commit) on
// every path that stops them: a page that fails to map, a fetch failing
// while a page is mapped, a signal while the fetcher waits on its send or
// the mapping is mid-page, a dead-lettered page, the end or a page limit
// reached with a page in flight. On each: the checkpoint never passes a
// page whose rows were not written, nothing is requested past the page in
// flight, and when Run returns no page is still being mapped and no
// goroutine of the walk is left (a mapping that outlives Run races the
// engine's next Run: loopWindows' rule).
func TestSequentialStagesStopCleanly(t *testing.T) {
	const n, size = 12, 3 // pages at cursors 1, 4, 7, 10
	for _, tt := range []struct {
		name  string
		skip  bool // on_bad_record: skip
		opts  Options
		serve func(w *walk, u *url.URL) (string, error)           // nil: cursorAPI
		check func(w *walk, r contract.Row)                       // the mapping of each row, nil: none
		want  func(t *testing.T, w *walk, res *Result, err error) // the run's outcome
		pages int64                                               // pages committed
		after string                                              // no request at or past this cursor
	}{
		{name: "a page fails to map", pages: 1, after: "10",
			serve: func(w *walk, u *url.URL) (string, error) {
				if u.Query().Get("after") == "4" {
					return `{"data":[{"id":4},{"id":"x"},{"id":6}],"next":7}`, nil
				}
				return cursorAPI(n, size)(w.ctx, u)
			},
			want: func(t *testing.T, w *walk, res *Result, err error) {
				if contract.ClassOf(err) != contract.Permanent || res.Status != contract.RunFailed || !strings.Contains(err.Error(), "bad record") {
					t.Fatalf("run: %+v, %v; want a permanent failure naming the bad record", res, err)
				}
			}},
		{name: "a fetch fails while a page is mapped", pages: 2, after: "10",
			serve: func(w *walk, u *url.URL) (string, error) {
				if u.Query().Get("after") == "7" {
					defer close(w.failed)
					return "", &contract.Error{Class: contract.Permanent, Msg: "GET " + u.String() + ": HTTP 404 Not Found", Status: 404}
				}
				return cursorAPI(n, size)(w.ctx, u)
			},
			check: func(w *walk, r contract.Row) {
				if r.Values[0] == int64(4) { // page 2 is mapped until page 3's fetch failed
					<-w.failed
				}
			},
			want: func(t *testing.T, w *walk, res *Result, err error) {
				if contract.ClassOf(err) != contract.Permanent || res.Status != contract.RunFailed || !strings.Contains(err.Error(), "404") {
					t.Fatalf("run: %+v, %v; want the fetch's failure", res, err)
				}
			}},
		{name: "a signal while the fetcher waits on its send", after: "10",
			check: func(w *walk, r contract.Row) {
				if r.Values[0] == int64(4) { // page 3 is fetched and waits for the mapping of page 2
					waitRequested(w.src, "after=7")
					time.Sleep(50 * time.Millisecond)
					w.cancel()
				}
			},
			want: interrupted},
		{name: "a signal while a page is mapped", after: "10",
			check: func(w *walk, r contract.Row) {
				if r.Values[0] == int64(5) { // mid-page: the mapping goes on a while after the signal
					w.cancel()
					time.Sleep(300 * time.Millisecond)
				}
			},
			want: interrupted},
		{name: "a dead-lettered page", skip: true, pages: 4,
			serve: func(w *walk, u *url.URL) (string, error) {
				if u.Query().Get("after") == "4" {
					return `{"data":[{"id":4},{"id":"x"},{"id":6}],"next":7}`, nil
				}
				return cursorAPI(n, size)(w.ctx, u)
			},
			want: func(t *testing.T, w *walk, res *Result, err error) {
				if err != nil || res.Status != contract.RunCompleted {
					t.Fatalf("run: %+v, %v; want completed", res, err)
				}
				dead, _ := w.rig.store.DeadLetters(context.Background(), "items", 10)
				if len(dead) != 1 || dead[0].Index != 1 || !strings.Contains(dead[0].Position, "4") {
					t.Errorf("dead letters %+v: want record 1 of the page at cursor 4", dead)
				}
			}},
		{name: "the end decided with a page in flight", pages: 4,
			check: func(w *walk, r contract.Row) {
				if r.Values[0] == int64(7) { // page 3 is mapped while the last page ends the walk
					waitRequested(w.src, "after=10")
				}
			},
			want: func(t *testing.T, w *walk, res *Result, err error) {
				if err != nil || res.Status != contract.RunCompleted || res.Inserted != n {
					t.Fatalf("run: %+v, %v; want completed with %d rows", res, err, n)
				}
			}},
		{name: "a page limit with a page in flight", opts: Options{MaxPages: 2}, pages: 2, after: "7",
			check: func(w *walk, r contract.Row) {
				if r.Values[0] == int64(1) {
					waitRequested(w.src, "after=4")
				}
			},
			want: func(t *testing.T, w *walk, res *Result, err error) {
				if err != nil || res.Status != contract.RunPartial {
					t.Fatalf("run: %+v, %v; want partial", res, err)
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			w := &walk{rig: newEngineRig(), failed: make(chan struct{})}
			w.ctx, w.cancel = context.WithCancel(context.Background())
			defer w.cancel()
			w.src = &fakeSource{records: "data", serve: func(ctx context.Context, u *url.URL) (string, error) {
				if tt.serve != nil {
					return tt.serve(w, u)
				}
				return cursorAPI(n, size)(ctx, u)
			}}
			sink := &stallSink{memSink: w.rig.sink, check: func(r contract.Row) {
				w.mapping.Add(1)
				defer w.mapping.Add(-1)
				if tt.check != nil {
					tt.check(w, r)
				}
			}}
			job := engineJob(t, "", cursorStyle)
			if tt.skip {
				job.Target.OnBadRecord = "skip"
			}
			e := w.rig.engine(job, w.src)
			e.OpenSink = func(context.Context) (contract.Sink, error) { return sink, nil }
			res, err := e.Run(w.ctx, tt.opts)
			if m := w.mapping.Load(); m != 0 {
				t.Errorf("Run returned while %d row(s) were still being mapped", m)
			}
			tt.want(t, w, res, err)

			// The checkpoint is right after the pages whose rows were written.
			run := w.rig.store.lastRun()
			if tt.pages > 0 && run.Pages != tt.pages {
				t.Errorf("%d pages committed, want %d", run.Pages, tt.pages)
			}
			rows := int64(w.rig.sink.count())
			if tt.skip {
				rows++ // the dead letter
			}
			if rows != size*run.Pages {
				t.Errorf("%d rows for %d pages committed", rows, run.Pages)
			}
			if run.Pages < n/size {
				if want := (paging.Position{At: paging.CursorAt{Cursor: strconv.FormatInt(1+size*run.Pages, 10)}}).Encode(); run.Pages > 0 && run.Checkpoint != want {
					t.Errorf("checkpoint %s after %d pages, want %s", run.Checkpoint, run.Pages, want)
				}
			}
			if tt.after != "" {
				if got := w.src.requests(); slices.ContainsFunc(got, func(u string) bool { return strings.Contains(u, "after="+tt.after) }) {
					t.Errorf("requested %q: nothing at or past cursor %s should be", got, tt.after)
				}
			}
			goroutinesBack(t, before)
		})
	}
}

// walk is one run of TestSequentialStagesStopCleanly.
type walk struct {
	rig     *engineRig
	src     *fakeSource
	ctx     context.Context
	cancel  context.CancelFunc
	failed  chan struct{} // closed by a fetch that fails
	mapping atomic.Int32  // rows whose check is under way
}

// interrupted wants the run stopped by its signal.
func interrupted(t *testing.T, _ *walk, res *Result, err error) {
	t.Helper()
	if !errors.Is(err, contract.ErrInterrupted) || res.Status != contract.RunInterrupted {
		t.Fatalf("run: %+v, %v; want interrupted", res, err)
	}
}

// waitRequested waits until src was asked for a URL holding part (5s at most).
func waitRequested(src *fakeSource, part string) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if slices.ContainsFunc(src.requests(), func(u string) bool { return strings.Contains(u, part) }) {
			return
		}
	}
}

// goroutinesBack fails t unless the process is back to before goroutines
// within 5s, printing the engine's goroutines left.
func goroutinesBack(t *testing.T, before int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if runtime.NumGoroutine() <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			var left []string
			for _, g := range strings.Split(string(buf), "\n\n") {
				if strings.Contains(g, "idemsync/sync.") {
					left = append(left, g)
				}
			}
			t.Fatalf("%d goroutines, %d before the run; the engine's:\n%s", runtime.NumGoroutine(), before, strings.Join(left, "\n\n"))
		}
	}
}

// The concurrent walk (page style, source.concurrency) obeys the same rule:
// a signal while its workers map pages returns from Run only once none of
// them is mapping any more, and no goroutine of the walk is left.
func TestConcurrentWorkersStopWithRun(t *testing.T) {
	before := runtime.NumGoroutine()
	rig := newEngineRig()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mapping atomic.Int32
	sink := &stallSink{memSink: rig.sink, check: func(r contract.Row) {
		mapping.Add(1)
		defer mapping.Add(-1)
		if r.Values[0] == int64(3) { // page 2 of 6, mid-page
			cancel()
			time.Sleep(300 * time.Millisecond)
		}
	}}
	e := rig.engine(engineJob(t, "  concurrency: 3\n", pageStyle), &fakeSource{records: "data", serve: pagesAPI(12)})
	e.OpenSink = func(context.Context) (contract.Sink, error) { return sink, nil }
	res, err := e.Run(ctx, Options{})
	if m := mapping.Load(); m != 0 {
		t.Errorf("Run returned while %d row(s) were still being mapped", m)
	}
	interrupted(t, nil, res, err)
	if run := rig.store.lastRun(); int64(rig.sink.count()) != 2*run.Pages {
		t.Errorf("%d rows for %d pages committed", rig.sink.count(), run.Pages)
	}
	goroutinesBack(t, before)
}
