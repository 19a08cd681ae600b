package sync

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"
)

// Fan-out tests: a child resource walked once per parent row, against the
// in-memory source, store and sink (fanSink adds the parent table).

// fanParent is one row of the parent table orders (key id).
type fanParent struct {
	id     int
	code   string
	synced time.Time
}

// fanSink is a memSink that also holds the parent table.
type fanSink struct {
	*memSink
	pmu     gosync.Mutex
	parents []fanParent
	reads   []ParentFilter
}

var _ ParentReader = (*fanSink)(nil)

func (s *fanSink) ParentRows(_ context.Context, t *Table, cols []string, f ParentFilter) ([][]*string, error) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.reads = append(s.reads, f)
	rows := slices.Clone(s.parents)
	slices.SortFunc(rows, func(a, b fanParent) int { return a.id - b.id })
	var out [][]*string
	for _, p := range rows {
		if !f.Since.IsZero() && p.synced.Before(f.Since) ||
			f.From != nil && int64(p.id) < f.From[0].(int64) || f.To != nil && int64(p.id) > f.To[0].(int64) {
			continue
		}
		var vals []*string
		for _, c := range cols {
			var v string
			switch c {
			case "id":
				v = strconv.Itoa(p.id)
			case "code":
				v = p.code
			default:
				return nil, fmt.Errorf("no column %s in %s", c, t.Name)
			}
			vals = append(vals, &v)
		}
		out = append(out, vals)
	}
	return out, nil
}

// touch marks parent id as written now.
func (s *fanSink) touch(id int) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	for i := range s.parents {
		if s.parents[i].id == id {
			s.parents[i].synced = time.Now()
		}
	}
}

// newFanRig is an engine rig whose sink holds parents with the given ids,
// all written an hour ago.
func newFanRig(ids ...int) (*engineRig, *fanSink) {
	rig := newEngineRig()
	fs := &fanSink{memSink: rig.sink}
	for _, id := range ids {
		fs.parents = append(fs.parents, fanParent{id: id, code: fmt.Sprintf("c%d", id), synced: time.Now().Add(-time.Hour)})
	}
	return rig, fs
}

func (r *engineRig) fanEngine(job *Job, src PageSource, sink Sink) *Engine {
	e := r.engine(job, src)
	e.OpenSink = func(context.Context) (Sink, error) { return sink, nil }
	return e
}

// childJob is order_items: /orders/{parent.id}/items by page (2 per
// page), key [order_id, id], order_id from the parent's id.
func childJob(t *testing.T, source, rows string, conc int) *Job {
	t.Helper()
	url := "http://api.test/orders/{parent.id}/items"
	if strings.Contains(source, "url:") {
		url, source = "", strings.TrimSpace(source)
	}
	spec := "name: shop.order_items\nsource:\n  records: data\n"
	if url != "" {
		spec += "  url: " + url + "\n"
	} else {
		spec += "  " + source + "\n"
	}
	spec += "pagination:\n" + pageStyle +
		"retry:\n  attempts: 2\n  min_wait: 1ms\n  max_wait: 2ms\n" +
		"target:\n  url: sqlite:out.db\n  table: order_items\n  key: [order_id, id]\n  columns:\n" +
		"    order_id: {parent: id, type: integer}\n    id: {path: id, type: integer}\n"
	job := testJob(t, spec)
	job.Parent = &ParentSpec{Resource: "orders", Name: "shop.orders", URL: "sqlite:out.db", Rows: rows, Concurrency: conc,
		Table: Table{Name: "orders", Key: []string{"id"}, Columns: []Column{{Name: "id", Path: "id", Type: TypeInteger}, {Name: "code", Path: "code", Type: TypeText}}}}
	return job
}

var itemsPath = regexp.MustCompile(`^/orders/([^/]+)/items$`)

// itemsAPI serves, for order o, items 1..counts[o] in pages of per_page;
// an order missing from counts is a 404.
func itemsAPI(counts map[string]int) func(context.Context, *url.URL) (string, error) {
	serve := map[string]func(context.Context, *url.URL) (string, error){}
	for o, n := range counts {
		serve[o] = pagesAPI(n)
	}
	return func(ctx context.Context, u *url.URL) (string, error) {
		m := itemsPath.FindStringSubmatch(u.EscapedPath())
		if m == nil || serve[m[1]] == nil {
			return "", &Error{Code: ExitPermanent, Msg: "GET " + u.String() + ": HTTP 404 Not Found", Status: 404}
		}
		return serve[m[1]](ctx, u)
	}
}

// childRows returns the target's rows as "order_id/id", sorted.
func childRows(s *memSink) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.rows {
		out = append(out, fmt.Sprintf("%v/%v", r.Values[0], r.Values[1]))
	}
	slices.Sort(out)
	return out
}

// orderRequests counts the requests per order id.
func orderRequests(src *fakeSource) map[string]int {
	n := map[string]int{}
	for _, u := range src.requests() {
		pu, _ := url.Parse(u)
		if m := itemsPath.FindStringSubmatch(pu.EscapedPath()); m != nil {
			n[m[1]]++
		}
	}
	return n
}

// Every parent's children are walked, page by page, each row taking the
// parent's id (typed as the column says); a parent with no children is one
// empty page.
func TestFanOutWalksEveryParent(t *testing.T) {
	rig, fs := newFanRig(3, 1, 2)
	src := &fakeSource{records: "data", serve: itemsAPI(map[string]int{"1": 3, "2": 0, "3": 4})}
	res, err := rig.fanEngine(childJob(t, "", "", 1), src, fs).Run(context.Background(), Options{})
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("run: %+v, %v", res, err)
	}
	want := []string{"1/1", "1/2", "1/3", "3/1", "3/2", "3/3", "3/4"}
	if got := childRows(rig.sink); !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	// order 1: pages 1, 2 (short); order 2: one empty page; order 3: pages 1, 2, 3 (empty)
	if res.Pages != 6 || res.Records != 7 {
		t.Errorf("result %+v: want 6 pages, 7 records", res)
	}
	for _, r := range rig.sink.rows {
		if _, ok := r.Values[0].(int64); !ok {
			t.Errorf("order_id %#v is not an int64", r.Values[0])
		}
	}
	if run := rig.store.lastRun(); run.Status != RunCompleted || len(run.Parents) != 3 || !strings.Contains(run.Parents[0], `"id":"1"`) {
		t.Errorf("run %+v: want completed with the 3 parents in key order", run)
	}
	// the parents are walked in key order, each before the next
	var order []string
	for _, u := range src.requests() {
		o := strings.Split(u, "/")[4]
		if len(order) == 0 || order[len(order)-1] != o {
			order = append(order, o)
		}
	}
	if !slices.Equal(order, []string{"1", "2", "3"}) {
		t.Errorf("parents requested in order %q", order)
	}
}

// Without parent rows the run completes at once with no page.
func TestFanOutZeroParents(t *testing.T) {
	rig, fs := newFanRig()
	src := &fakeSource{records: "data", serve: itemsAPI(nil)}
	res, err := rig.fanEngine(childJob(t, "", "", 1), src, fs).Run(context.Background(), Options{})
	if err != nil || res.Status != RunCompleted || res.Pages != 0 || len(src.requests()) != 0 {
		t.Fatalf("run: %+v, %v, requests %q; want completed with 0 pages", res, err, src.requests())
	}
	if run := rig.store.lastRun(); run.Status != RunCompleted || res.Checkpoint != "no parent rows (end)" {
		t.Errorf("run %+v, checkpoint %q: want completed, no parent rows (end)", run, res.Checkpoint)
	}
}

// parent_rows: changed walks the parents written since the child's last
// completed run began (all of them the first time); all walks every one.
func TestFanOutChangedAndAll(t *testing.T) {
	for _, tt := range []struct {
		rows   string
		second map[string]int // requests per order in the second run
	}{
		{"", map[string]int{"2": 2}},
		{ParentRowsChanged, map[string]int{"2": 2}},
		{ParentRowsAll, map[string]int{"1": 2, "2": 2, "3": 2}},
	} {
		t.Run("rows "+tt.rows, func(t *testing.T) {
			rig, fs := newFanRig(1, 2, 3)
			serve := itemsAPI(map[string]int{"1": 1, "2": 1, "3": 1})
			job := childJob(t, "", tt.rows, 1)
			src := &fakeSource{records: "data", serve: serve}
			if res, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{}); err != nil || res.Status != RunCompleted {
				t.Fatalf("first run: %+v, %v", res, err)
			}
			if got := orderRequests(src); len(got) != 3 {
				t.Errorf("first run requested %v: want every parent", got)
			}
			fs.touch(2)
			src = &fakeSource{records: "data", serve: serve}
			if res, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{}); err != nil || res.Status != RunCompleted {
				t.Fatalf("second run: %+v, %v", res, err)
			}
			if got := orderRequests(src); fmt.Sprint(got) != fmt.Sprint(tt.second) {
				t.Errorf("second run requested %v, want %v", got, tt.second)
			}
		})
	}
}

// A failed child run does not move what changed walks next: the parents
// written before it are walked again by the next new run.
func TestFanOutChangedAfterFailedRun(t *testing.T) {
	rig, fs := newFanRig(1, 2)
	job := childJob(t, "", "", 1)
	ok := itemsAPI(map[string]int{"1": 1, "2": 1})
	if _, err := rig.fanEngine(job, &fakeSource{records: "data", serve: ok}, fs).Run(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	fs.touch(1)
	fs.touch(2)
	// parent 2 fails: the run fails after parent 1
	bad := itemsAPI(map[string]int{"1": 1})
	if _, err := rig.fanEngine(job, &fakeSource{records: "data", serve: bad}, fs).Run(context.Background(), Options{}); ExitCode(err) != ExitPermanent {
		t.Fatalf("second run: %v, want exit %d", err, ExitPermanent)
	}
	// a new run (--restart) takes the snapshot again from the last completed run
	src := &fakeSource{records: "data", serve: ok}
	if res, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{Restart: true}); err != nil || res.Status != RunCompleted {
		t.Fatalf("third run: %+v, %v", res, err)
	}
	if got := orderRequests(src); got["1"] != 2 || got["2"] != 2 {
		t.Errorf("third run requested %v: want both parents written since the last completed run", got)
	}
}

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
				var ckpt RunInfo
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
				if res.Status == RunCompleted {
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
func checkResumed(t *testing.T, n, conc int, run RunInfo, reqs []string) {
	t.Helper()
	p, err := DecodePosition(run.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := decodeWindows(p)
	if err != nil {
		t.Fatal(err)
	}
	oid := func(k int) string {
		row := run.Parents[k]
		i := strings.Index(row, `"id":"`)
		return row[i+6 : i+6+strings.Index(row[i+6:], `"`)]
	}
	at := map[string]int64{oid(p.Win): p.Page} // order id → checkpoint page; -1: completed
	for k, q := range ws.Pos {
		i, _ := strconv.Atoi(k)
		at[oid(i)] = q.Page
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
	if conc == 1 && (len(reqs) == 0 || reqs[0] != pageURL(oid(p.Win), p.Page)) {
		t.Fatalf("run %d requested %q first, want the checkpoint's page %s", n, reqs, pageURL(oid(p.Win), p.Page))
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
		if ExitCode(err) != ExitPermanent || res.Status != RunFailed || !strings.Contains(err.Error(), "parent orders id=2: ") || !strings.Contains(err.Error(), "404") {
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
		if err != nil || res.Status != RunCompleted || res.Skipped != 1 {
			t.Fatalf("run: %+v, %v; want completed with 1 skipped", res, err)
		}
		if got := childRows(rig.sink); !slices.Equal(got, []string{"1/1", "3/1"}) {
			t.Errorf("rows %q", got)
		}
		dead, _ := rig.store.DeadLetters(context.Background(), job.Name, 0)
		if len(dead) != 1 || !strings.Contains(dead[0].Reason, "parent orders id=2: ") || !strings.Contains(dead[0].Reason, "404") {
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
	job.Source.Query = map[string]QueryValue{"code": {"{parent.code}"}}
	job.Source.Headers = map[string]string{"X-Code": "{parent.code}"}
	job.Source.Body = `{"q":{"code":"{parent.code}","n":["id {parent.id}"]}}`
	var got Request
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
	want := []BodyValue{{Path: "q.code", Value: "a/b c?&x"}, {Path: "q.n.0", Value: "id 1"}}
	if fmt.Sprint(got.Body) != fmt.Sprint(want) {
		t.Errorf("body values %v, want %v", got.Body, want)
	}
}

// recordingSource is a fakeSource that keeps its first request whole.
type recordingSource struct {
	fakeSource
	once  gosync.Once
	first Request
}

func (s *recordingSource) Fetch(ctx context.Context, req Request) (*Response, error) {
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
	res, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{Kind: KindReplay, From: "2", To: "3"})
	if err != nil || res.Status != RunCompleted {
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
	if _, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{Kind: KindReplay, From: "x"}); ExitCode(err) != ExitUsage {
		t.Errorf("replay --from x: %v, want exit %d", err, ExitUsage)
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
	if err != nil || res.Status != RunCompleted {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if n := rig.sink.count(); n != 40 || res.Records != 40 {
		t.Errorf("%d rows, %d records; want 40", n, res.Records)
	}
	if most < 2 || most > 4 {
		t.Errorf("at most %d requests in flight, want 2 to 4", most)
	}
	if run := rig.store.lastRun(); run.Status != RunCompleted || !strings.Contains(run.Checkpoint, `"end":true`) {
		t.Errorf("run %+v", run)
	}
}

// A continued run whose snapshot lacks a parent column the job uses now
// (added to the mapping since it started) fails asking for --restart
// instead of writing the column NULL.
func TestFanOutSnapshotLacksColumn(t *testing.T) {
	rig, fs := newFanRig(1, 2)
	job := childJob(t, "", "", 1)
	serve := itemsAPI(map[string]int{"1": 1, "2": 1})
	if res, err := rig.fanEngine(job, &fakeSource{records: "data", serve: serve}, fs).Run(context.Background(), Options{MaxPages: 1}); err != nil || res.Status != RunPartial {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	job.Table.Columns = append(job.Table.Columns, Column{Name: "code", Type: TypeText, Parent: "code"})
	_, err := rig.fanEngine(job, &fakeSource{records: "data", serve: serve}, fs).Run(context.Background(), Options{})
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--restart") {
		t.Fatalf("continued run: %v; want exit %d asking for --restart", err, ExitUsage)
	}
	if res, err := rig.fanEngine(job, &fakeSource{records: "data", serve: serve}, fs).Run(context.Background(), Options{Restart: true}); err != nil || res.Status != RunCompleted {
		t.Fatalf("--restart: %+v, %v", res, err)
	}
}
