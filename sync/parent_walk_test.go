package sync

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	"github.com/idemsync/idemsync/sync/paging"
)

// A run stopped after every page (--max-pages 1) resumes at the exact
// child page of the exact parent: each resumed run first requests the
// page its checkpoint names, and the walk ends with every row once.
func TestFanOutResumesAtTheChildPage(t *testing.T) {
	for _, conc := range []int{1, 3} {
		t.Run(fmt.Sprint("fanout_concurrency ", conc), func(t *testing.T) {
			rig, fs := newFanRig(1, 2, 3, 4)
			serve := itemsAPI(map[string]int{"1": 5, "2": 0, "3": 2, "4": 3})
			job := childJob(t, "", "", conc)
			var pages int64
			for n := 0; ; n++ {
				if n > 30 {
					t.Fatal("the walk does not end")
				}
				var ckpt contract.RunInfo
				if n > 0 {
					ckpt = rig.store.lastRun()
				}
				src := &fakeSource{records: "data", serve: serve}
				res, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{MaxPages: 1})
				if err != nil {
					t.Fatalf("run %d: %+v, %v", n, res, err)
				}
				if ckpt.Unfinished() {
					checkResumed(t, n, conc, ckpt, src.requests())
				}
				if res.Status == contract.RunCompleted {
					pages = res.Pages
					break
				}
			}
			want := []string{"1/1", "1/2", "1/3", "1/4", "1/5", "3/1", "3/2", "4/1", "4/2", "4/3"}
			if got := childRows(rig.sink); !slices.Equal(got, want) {
				t.Errorf("rows %q, want %q", got, want)
			}
			// 1: pages 1-3, 2: 1 empty, 3: pages 1-2 (2 empty), 4: pages 1-2
			if pages != 8 {
				t.Errorf("%d pages committed in the run, want 8: no page twice", pages)
			}
		})
	}
}

// checkResumed checks the requests of a run that continued run: with one
// parent at a time, the first is the page of the checkpoint; no page before
// a parent's checkpoint, and none of a completed parent, is requested.
func checkResumed(t *testing.T, n, conc int, run contract.RunInfo, reqs []string) {
	t.Helper()
	p, err := paging.DecodePosition(paging.StylePage, run.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	ws := p.Windows()
	// Window k is the k-th parent started: parents 1..n in key order, none
	// removed, so parent k+1; a window in flight carries its row, which
	// must say the same.
	oid := func(k int) string {
		row, ok := ws.Rows[strconv.Itoa(k)]
		if !ok {
			return strconv.Itoa(k + 1)
		}
		i := strings.Index(row, `"id":"`)
		id := row[i+6 : i+6+strings.Index(row[i+6:], `"`)]
		if id != strconv.Itoa(k+1) {
			t.Errorf("window %d in flight holds parent %s, want %d", k, id, k+1)
		}
		return id
	}
	at := map[string]int64{oid(p.Win): paging.PageOf(p.At).Page} // order id → checkpoint page; -1: completed
	for i, q := range ws.Pos {
		at[oid(i)] = paging.PageOf(q).Page
	}
	for _, k := range ws.Done {
		at[oid(k)] = -1
	}
	for k := range p.Win {
		at[oid(k)] = -1
	}
	pageURL := func(o string, page int64) string {
		return fmt.Sprintf("http://api.test/orders/%s/items?page=%d&per_page=2", o, page)
	}
	if conc == 1 && (len(reqs) == 0 || reqs[0] != pageURL(oid(p.Win), paging.PageOf(p.At).Page)) {
		t.Fatalf("run %d requested %q first, want the checkpoint's page %s", n, reqs, pageURL(oid(p.Win), paging.PageOf(p.At).Page))
	}
	for _, r := range reqs {
		u, _ := url.Parse(r)
		o := itemsPath.FindStringSubmatch(u.Path)[1]
		page, _ := strconv.ParseInt(u.Query().Get("page"), 10, 64)
		if c, ok := at[o]; ok && (c < 0 || page < c) {
			t.Errorf("run %d requested %s: before the checkpoint (%d) of parent %s", n, r, c, o)
		}
	}
}

// A 404 for one parent's children fails the run naming the parent under
// on_bad_record: fail; under skip it is a dead letter naming the parent,
// and the walk goes on to the next parent.
func TestFanOutMissingParent(t *testing.T) {
	serve := itemsAPI(map[string]int{"1": 1, "3": 1}) // 2 is a 404
	t.Run("fail", func(t *testing.T) {
		rig, fs := newFanRig(1, 2, 3)
		res, err := rig.fanEngine(childJob(t, "", "", 1), &fakeSource{records: "data", serve: serve}, fs).Run(context.Background(), Options{})
		if contract.ClassOf(err) != contract.Permanent || res.Status != contract.RunFailed || !strings.Contains(err.Error(), "parent orders id=2") || !strings.Contains(err.Error(), "404") {
			t.Fatalf("run: %+v, %v; want exit 1 naming parent orders id=2 and the 404", res, err)
		}
		if got := childRows(rig.sink); !slices.Equal(got, []string{"1/1"}) {
			t.Errorf("rows %q", got)
		}
	})
	t.Run("skip", func(t *testing.T) {
		rig, fs := newFanRig(1, 2, 3)
		job := childJob(t, "", "", 1)
		job.Target.OnBadRecord = "skip"
		res, err := rig.fanEngine(job, &fakeSource{records: "data", serve: serve}, fs).Run(context.Background(), Options{})
		if err != nil || res.Status != contract.RunCompleted || res.Skipped != 1 {
			t.Fatalf("run: %+v, %v; want completed with 1 skipped", res, err)
		}
		if got := childRows(rig.sink); !slices.Equal(got, []string{"1/1", "3/1"}) {
			t.Errorf("rows %q", got)
		}
		dead, _ := rig.store.DeadLetters(context.Background(), job.Name, 0)
		if len(dead) != 1 || !strings.Contains(dead[0].Reason, "parent orders id=2") || !strings.Contains(dead[0].Reason, "404") {
			t.Errorf("dead letters %+v; want one naming parent orders id=2 and the 404", dead)
		}
	})
}

// Parent values are escaped where they land: path-escaped in the path,
// query-escaped in the URL's query and in source.query, raw in a header.
func TestFanOutEscapesParentValues(t *testing.T) {
	rig, fs := newFanRig(1)
	fs.parents[0].code = "a/b c?&x"
	job := childJob(t, "url: http://api.test/orders/{parent.code}/items?o={parent.code}", "", 1)
	job.Source.Query = map[string]spec.QueryValue{"code": {"{parent.code}"}}
	job.Source.Headers = map[string]string{"X-Code": "{parent.code}"}
	job.Source.Body = `{"q":{"code":"{parent.code}","n":["id {parent.id}"]}}`
	var got contract.Request
	src := &recordingSource{fakeSource: fakeSource{records: "data", serve: func(context.Context, *url.URL) (string, error) { return `{"data":[]}`, nil }}}
	if _, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	got = src.first
	if !strings.HasPrefix(got.URL, "http://api.test/orders/a%2Fb%20c%3F&x/items?") {
		t.Errorf("URL %s: want the code path-escaped", got.URL)
	}
	u, _ := url.Parse(got.URL)
	if q := u.Query(); q.Get("o") != "a/b c?&x" || q.Get("code") != "a/b c?&x" {
		t.Errorf("query %v: want o and code decoding to the code", q)
	}
	if got.Header["X-Code"] != "a/b c?&x" {
		t.Errorf("header %q", got.Header["X-Code"])
	}
	want := []contract.BodyValue{{Path: "q.code", Value: "a/b c?&x"}, {Path: "q.n.0", Value: "id 1"}}
	if fmt.Sprint(got.Body) != fmt.Sprint(want) {
		t.Errorf("body values %v, want %v", got.Body, want)
	}
}

// recordingSource is a fakeSource that keeps its first request whole.
type recordingSource struct {
	fakeSource
	once  gosync.Once
	first contract.Request
}

func (s *recordingSource) Fetch(ctx context.Context, req contract.Request) (*contract.Response, error) {
	s.once.Do(func() { s.first = req })
	return s.fakeSource.Fetch(ctx, req)
}

// A replay walks the children of the parents whose key lies in
// [--from, --to], and does not move what parent_rows: changed walks next.
func TestFanOutReplayKeyRange(t *testing.T) {
	rig, fs := newFanRig(1, 2, 3, 4)
	serve := itemsAPI(map[string]int{"1": 1, "2": 1, "3": 1, "4": 1})
	job := childJob(t, "", "", 1)
	if _, err := rig.fanEngine(job, &fakeSource{records: "data", serve: serve}, fs).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	fs.touch(4)
	src := &fakeSource{records: "data", serve: serve}
	res, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{Kind: contract.KindReplay, From: "2", To: "3"})
	if err != nil || res.Status != contract.RunCompleted {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	if got := orderRequests(src); fmt.Sprint(got) != "map[2:2 3:2]" { // a short page, then the empty page that proves it
		t.Errorf("replay requested %v, want parents 2 and 3", got)
	}
	src = &fakeSource{records: "data", serve: serve}
	if _, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	if got := orderRequests(src); fmt.Sprint(got) != "map[4:2]" {
		t.Errorf("run after the replay requested %v, want parent 4 only (written since the last completed run)", got)
	}
	if _, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{Kind: contract.KindReplay, From: "x"}); contract.ClassOf(err) != contract.Invalid {
		t.Errorf("replay --from x: %v, want exit %d", err, contract.Invalid)
	}
}

// fanout_concurrency 4 walks several parents at once; every row lands
// once and the run's pages are those of a walk one parent at a time.
func TestFanOutConcurrent(t *testing.T) {
	var ids []int
	counts := map[string]int{}
	for i := 1; i <= 20; i++ {
		ids = append(ids, i)
		counts[strconv.Itoa(i)] = i % 5
	}
	rig, fs := newFanRig(ids...)
	var mu gosync.Mutex
	inFlight, most := 0, 0
	base := itemsAPI(counts)
	serve := func(ctx context.Context, u *url.URL) (string, error) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		return base(ctx, u)
	}
	res, err := rig.fanEngine(childJob(t, "", "", 4), &fakeSource{records: "data", serve: serve}, fs).Run(context.Background(), Options{})
	if err != nil || res.Status != contract.RunCompleted {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if n := rig.sink.count(); n != 40 || res.Records != 40 {
		t.Errorf("%d rows, %d records; want 40", n, res.Records)
	}
	if most < 2 || most > 4 {
		t.Errorf("at most %d requests in flight, want 2 to 4", most)
	}
	if run := rig.store.lastRun(); run.Status != contract.RunCompleted || !strings.Contains(run.Checkpoint, `"end":true`) {
		t.Errorf("run %+v", run)
	}
}

// A continued run whose parent in flight was read without a parent column
// the job uses now (added to the mapping since it started) fails asking
// for --restart instead of writing the column NULL. (Parents not started
// yet are read from the parent table with the columns the job uses now.)
func TestFanOutSnapshotLacksColumn(t *testing.T) {
	rig, fs := newFanRig(1, 2)
	job := childJob(t, "", "", 1)
	serve := itemsAPI(map[string]int{"1": 5, "2": 1}) // parent 1 in flight after one page
	if res, err := rig.fanEngine(job, &fakeSource{records: "data", serve: serve}, fs).Run(context.Background(), Options{MaxPages: 1}); err != nil || res.Status != contract.RunPartial {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	job = childJob(t, "", "", 1) // the first run's pipeline may still read the old job
	job.Table.Columns = append(job.Table.Columns, contract.Column{Name: "code", Type: contract.TypeText, Parent: "code"})
	_, err := rig.fanEngine(job, &fakeSource{records: "data", serve: serve}, fs).Run(context.Background(), Options{})
	if contract.ClassOf(err) != contract.Invalid || !strings.Contains(err.Error(), "--restart") {
		t.Fatalf("continued run: %v; want exit %d asking for --restart", err, contract.Invalid)
	}
	if res, err := rig.fanEngine(job, &fakeSource{records: "data", serve: serve}, fs).Run(context.Background(), Options{Restart: true}); err != nil || res.Status != contract.RunCompleted {
		t.Fatalf("--restart: %+v, %v", res, err)
	}
}

// An unfinished child run begun by an earlier version, whose checkpoint
// indexes a copy of the parent rows this version no longer keeps, is
// abandoned: a new run walks the parent table and completes.
func TestFanOutRunWithParentCopyStartsOver(t *testing.T) {
	rig, fs := newFanRig(1, 2, 3)
	job := childJob(t, "", "", 1)
	old := paging.Position{At: paging.PageAt{Page: 2}, Win: 1, Parent: "id=2"} // parent 2 of a stored copy, page 2
	if _, err := rig.store.StartRun(context.Background(), &contract.RunInfo{Job: job.Name, Kind: contract.KindRun, Status: contract.RunPartial,
		Checkpoint: old.Encode(), Identity: job.Identity().Encode()}); err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{records: "data", serve: itemsAPI(map[string]int{"1": 1, "2": 3, "3": 1})}
	res, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{})
	if err != nil || res.Status != contract.RunCompleted || res.Resumed || res.RunID != 2 {
		t.Fatalf("run after a run with a parent copy: %+v, %v; want a new run, completed", res, err)
	}
	if got := childRows(rig.sink); len(got) != 5 {
		t.Errorf("rows %q, want the 5 children of parents 1 to 3", got)
	}
}
