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

	"github.com/idemsync/idemsync/contract"
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
	reads   []contract.ParentFilter
}

var _ contract.ParentReader = (*fanSink)(nil)

func (s *fanSink) ParentRows(_ context.Context, t *contract.Table, cols []string, f contract.ParentFilter) ([][]*string, error) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.reads = append(s.reads, f)
	rows := slices.Clone(s.parents)
	slices.SortFunc(rows, func(a, b fanParent) int { return a.id - b.id })
	var out [][]*string
	for _, p := range rows {
		if !f.Since.IsZero() && p.synced.Before(f.Since) ||
			f.From != nil && int64(p.id) < f.From[0].(int64) || f.To != nil && int64(p.id) > f.To[0].(int64) ||
			f.After != nil && int64(p.id) <= f.After[0].(int64) {
			continue
		}
		if f.Limit > 0 && len(out) == f.Limit {
			break
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

func (r *engineRig) fanEngine(job *Job, src contract.PageSource, sink contract.Sink) *Engine {
	e := r.engine(job, src)
	e.OpenSink = func(context.Context) (contract.Sink, error) { return sink, nil }
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
		Table: contract.Table{Name: "orders", Key: []string{"id"}, Columns: []contract.Column{{Name: "id", Path: "id", Type: contract.TypeInteger}, {Name: "code", Path: "code", Type: contract.TypeText}}}}
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
			return "", &contract.Error{Class: contract.Permanent, Msg: "GET " + u.String() + ": HTTP 404 Not Found", Status: 404}
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
	if err != nil || res.Status != contract.RunCompleted {
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
	if run := rig.store.lastRun(); run.Status != contract.RunCompleted || !strings.Contains(run.Checkpoint, `id=3`) {
		t.Errorf("run %+v: want completed at the last of the 3 parents", run)
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
	if err != nil || res.Status != contract.RunCompleted || res.Pages != 0 || len(src.requests()) != 0 {
		t.Fatalf("run: %+v, %v, requests %q; want completed with 0 pages", res, err, src.requests())
	}
	if run := rig.store.lastRun(); run.Status != contract.RunCompleted || res.Checkpoint != "no parent rows (end)" {
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
			if res, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{}); err != nil || res.Status != contract.RunCompleted {
				t.Fatalf("first run: %+v, %v", res, err)
			}
			if got := orderRequests(src); len(got) != 3 {
				t.Errorf("first run requested %v: want every parent", got)
			}
			fs.touch(2)
			src = &fakeSource{records: "data", serve: serve}
			if res, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{}); err != nil || res.Status != contract.RunCompleted {
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
	if _, err := rig.fanEngine(job, &fakeSource{records: "data", serve: bad}, fs).Run(context.Background(), Options{}); contract.ClassOf(err) != contract.Permanent {
		t.Fatalf("second run: %v, want exit %d", err, contract.Permanent)
	}
	// a new run (--restart) takes the snapshot again from the last completed run
	src := &fakeSource{records: "data", serve: ok}
	if res, err := rig.fanEngine(job, src, fs).Run(context.Background(), Options{Restart: true}); err != nil || res.Status != contract.RunCompleted {
		t.Fatalf("third run: %+v, %v", res, err)
	}
	if got := orderRequests(src); got["1"] != 2 || got["2"] != 2 {
		t.Errorf("third run requested %v: want both parents written since the last completed run", got)
	}
}

// A child's walk includes its parent, parent_rows and the parent's table
// and key; fanout_concurrency is not part of it.
func TestFanOutIdentity(t *testing.T) {
	base := childJob(t, "", "", 1).Identity()
	if base["parent"] != "shop.orders" || base["parent.table"] != "orders" || base["parent.key"] != "id" || base["parent.rows"] != "" {
		t.Errorf("identity %v", base)
	}
	for name, change := range map[string]func(j *Job){
		"rows":  func(j *Job) { j.Parent.Rows = ParentRowsAll },
		"table": func(j *Job) { j.Parent.Table.Name = "orders2" },
		"key":   func(j *Job) { j.Parent.Table.Key = []string{"id", "code"} },
	} {
		j := childJob(t, "", "", 1)
		change(j)
		if c := j.Identity().Changes(base); len(c) == 0 {
			t.Errorf("%s: no change in the walk", name)
		}
	}
	if c := childJob(t, "", "", 8).Identity().Changes(base); len(c) != 0 {
		t.Errorf("fanout_concurrency changed the walk: %v", c)
	}
}
