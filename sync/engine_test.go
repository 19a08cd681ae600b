package sync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// Engine tests: the engine alone, against an in-memory PageSource, Store
// and Sink (fakesource_test.go, memstore_test.go). What the HTTP source
// and the real state file and databases do is tested in their packages
// and end to end in e2e/.

// engineJob loads a job on http://api.test/items whose records are at
// data, with an integer id key and fast retries.
func engineJob(t *testing.T, source, pagination string) *Job {
	t.Helper()
	spec := "name: items\nsource:\n  url: http://api.test/items\n  records: data\n" + source +
		"pagination:\n" + pagination +
		"retry:\n  attempts: 3\n  min_wait: 1ms\n  max_wait: 2ms\n" +
		"target:\n  url: sqlite:out.db\n  table: items\n  key: [id]\n  columns:\n    id: {path: id, type: integer}\n"
	job := testJob(t, spec)
	return job
}

// engineRig is an engine wired to fakes that outlive one run, so that a
// second run sees what the first committed.
type engineRig struct {
	store *memStore
	sink  *memSink
	trace *eventLog
	logs  *bytes.Buffer
}

func newEngineRig() *engineRig {
	trace := &eventLog{}
	return &engineRig{store: newMemStore(trace), sink: &memSink{rows: map[string]contract.Row{}, trace: trace}, trace: trace, logs: &bytes.Buffer{}}
}

func (r *engineRig) engine(job *Job, src contract.PageSource) *Engine {
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: r.logs}, nil))
	return &Engine{Job: job, Store: r.store, Source: src, Logger: log,
		OpenSink: func(context.Context) (contract.Sink, error) { return r.sink, nil }}
}

// pagesAPI serves records 1..n in pages of per_page by page number.
func pagesAPI(n int) func(context.Context, *url.URL) (string, error) {
	return func(_ context.Context, u *url.URL) (string, error) {
		page, _ := strconv.Atoi(u.Query().Get("page"))
		size, _ := strconv.Atoi(u.Query().Get("per_page"))
		from := (page-1)*size + 1
		return fmt.Sprintf(`{"data":%s}`, idRecs(from, min(size, n-from+1))), nil
	}
}

// cursorAPI serves records 1..n in pages of size, each page's next cursor
// the id its successor starts at (null after the last).
func cursorAPI(n, size int) func(context.Context, *url.URL) (string, error) {
	return func(_ context.Context, u *url.URL) (string, error) {
		from := 1
		if c := u.Query().Get("after"); c != "" {
			from, _ = strconv.Atoi(c)
		}
		k := min(size, n-from+1)
		next := "null"
		if from+k <= n {
			next = strconv.Itoa(from + k)
		}
		return fmt.Sprintf(`{"data":%s,"next":%s}`, idRecs(from, k), next), nil
	}
}

// idRecs is k records with ids from..from+k-1 (none when k <= 0).
func idRecs(from, k int) string {
	ids := make([]string, 0, max(k, 0))
	for i := range max(k, 0) {
		ids = append(ids, fmt.Sprintf(`{"id":%d}`, from+i))
	}
	return "[" + strings.Join(ids, ",") + "]"
}

const (
	cursorStyle = "  style: cursor\n  next: next\n  param: after\n"
	pageStyle   = "  style: page\n  size_param: per_page\n  size: 2\n"
)

// Each page's rows are written to the target before its checkpoint is
// committed, pages in pagination order, and each committed checkpoint is
// the position of the page committed next.
func TestEngineCommitsPagesInOrder(t *testing.T) {
	rig := newEngineRig()
	src := &fakeSource{records: "data", serve: cursorAPI(7, 3)}
	res, err := rig.engine(engineJob(t, "", cursorStyle), src).Run(context.Background(), Options{})
	if err != nil || res.Status != contract.RunCompleted {
		t.Fatalf("run: %+v, %v", res, err)
	}
	events := rig.trace.all()
	ck := func(c string) string { return "checkpoint " + paging.Position{At: paging.CursorAt{Cursor: c}}.Encode() }
	want := []string{"upsert [1 2 3]", ck(""), "upsert [4 5 6]", ck("4"), "upsert [7]", ck("7")}
	if !slices.Equal(events, want) {
		t.Errorf("events\n%q\nwant\n%q", events, want)
	}
	pages, _ := rig.store.Pages(context.Background(), res.RunID)
	for i := 1; i < len(pages); i++ {
		if pages[i-1].Next != pages[i].Position {
			t.Errorf("page %d's checkpoint %s is not page %d's position %s", i, pages[i-1].Next, i+1, pages[i].Position)
		}
	}
	if run := rig.store.lastRun(); run.Status != contract.RunCompleted || run.Pages != 3 || run.Records != 7 || res.Inserted != 7 {
		t.Errorf("run %+v, result %+v: want completed, 3 pages, 7 records inserted", run, res)
	}
}

// Options.Verify reaches the sink on every page of that run, and only of
// that run: a later run without it compares hashes again.
func TestEngineVerifyReachesSink(t *testing.T) {
	rig := newEngineRig()
	job := engineJob(t, "", cursorStyle)
	for _, verify := range []bool{true, false} {
		rig.sink.verify = nil
		src := &fakeSource{records: "data", serve: cursorAPI(7, 3)}
		res, err := rig.engine(job, src).Run(context.Background(), Options{Verify: verify})
		if err != nil || res.Status != contract.RunCompleted {
			t.Fatalf("run verify=%v: %+v, %v", verify, res, err)
		}
		if want := []bool{verify, verify, verify}; !slices.Equal(rig.sink.verify, want) {
			t.Errorf("run verify=%v: upserts saw Table.Verify %v, want %v", verify, rig.sink.verify, want)
		}
	}
}

// awaitPage waits until requested is closed: page n was asked for. It gives
// up after a while, so that an engine that never asks fails the test
// instead of hanging it.
func awaitPage(ctx context.Context, requested <-chan struct{}, n int) error {
	select {
	case <-requested:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return fmt.Errorf("page %d was never requested while another was in flight", n)
	}
}

// With requests in flight, a later page that arrives first still waits
// for the pages before it: pages commit in order.
func TestEngineConcurrentPagesCommitInOrder(t *testing.T) {
	rig := newEngineRig()
	first, third := make(chan struct{}), make(chan struct{})
	var mu gosync.Mutex
	inFlight, most := 0, 0
	serve := pagesAPI(10)
	src := &fakeSource{records: "data", serve: func(ctx context.Context, u *url.URL) (string, error) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		// Pages 1 and 3 each answer only once the other was asked for: both
		// are in flight at once, and page 3 may well arrive first.
		switch u.Query().Get("page") {
		case "1":
			close(first)
			if err := awaitPage(ctx, third, 3); err != nil {
				return "", err
			}
		case "3":
			close(third)
			if err := awaitPage(ctx, first, 1); err != nil {
				return "", err
			}
		}
		return serve(ctx, u)
	}}
	res, err := rig.engine(engineJob(t, "  concurrency: 4\n", pageStyle), src).Run(context.Background(), Options{})
	if err != nil || res.Status != contract.RunCompleted {
		t.Fatalf("run: %+v, %v", res, err)
	}
	mu.Lock() // requests past the end may still be in flight, cancelled
	peak := most
	mu.Unlock()
	if peak < 2 {
		t.Errorf("at most %d request(s) in flight, want pages 1 and 3 at once", peak)
	}
	var upserts []string
	for _, e := range rig.trace.all() {
		if strings.HasPrefix(e, "upsert") {
			upserts = append(upserts, e)
		}
	}
	want := []string{"upsert [1 2]", "upsert [3 4]", "upsert [5 6]", "upsert [7 8]", "upsert [9 10]"}
	if !slices.Equal(upserts, want) {
		t.Errorf("upserts %q, want %q", upserts, want)
	}
	pages, _ := rig.store.Pages(context.Background(), res.RunID)
	for i, p := range pages {
		if want := (paging.Position{At: paging.PageAt{Page: int64(i + 1)}}).Encode(); p.Position != want {
			t.Errorf("committed page %d is %s, want %s", i+1, p.Position, want)
		}
	}
}

// A page whose target write fails is not checkpointed: the run fails with
// the checkpoint at that page, and the next run writes it again.
func TestEngineFailedWriteKeepsCheckpoint(t *testing.T) {
	rig := newEngineRig()
	job := engineJob(t, "", cursorStyle)
	rig.sink.upsert = func(_ context.Context, rows []contract.Row) error {
		if rows[0].Values[0] == int64(4) {
			return errors.New("disk full")
		}
		return nil
	}
	res, err := rig.engine(job, &fakeSource{records: "data", serve: cursorAPI(7, 3)}).Run(context.Background(), Options{})
	if err == nil || res.Status != contract.RunFailed || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("run: %+v, %v; want failed naming the write error", res, err)
	}
	run := rig.store.lastRun()
	if run.Pages != 1 || run.Checkpoint != (paging.Position{At: paging.CursorAt{Cursor: "4"}}).Encode() {
		t.Errorf("run %+v: want 1 page committed, checkpoint at cursor 4", run)
	}
	if events := rig.trace.all(); !slices.Equal(events, []string{"upsert [1 2 3]", "checkpoint " + paging.Position{At: paging.CursorAt{}}.Encode()}) {
		t.Errorf("events %q: the failed page was checkpointed", events)
	}

	rig.sink.upsert = nil
	res, err = rig.engine(job, &fakeSource{records: "data", serve: cursorAPI(7, 3)}).Run(context.Background(), Options{})
	if err != nil || res.Status != contract.RunCompleted || !res.Resumed || rig.sink.count() != 7 {
		t.Fatalf("next run: %+v, %v with %d rows; want the failed run continued to 7 rows", res, err, rig.sink.count())
	}
}
