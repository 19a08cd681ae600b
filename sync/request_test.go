package sync

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// The position goes where pagination.in says, written by the template: a
// page number or offset in a body is a number unless a template makes it
// text; {end} is the inclusive last offset; size stays a query parameter.
func TestRequestPlacement(t *testing.T) {
	for _, tc := range []struct {
		name, pagination string
		pos              paging.Position
		url              string
		header           map[string]string
		body             []contract.BodyValue
	}{
		{"offset header template", "  style: offset\n  size: 25\n  in: header\n  param: Range\n  template: \"items={offset}-{end}\"\n",
			paging.Position{At: paging.OffsetAt{Offset: 50}}, "http://api.test/items?limit=25", map[string]string{"Range": "items=50-74"}, nil},
		{"offset in body", "  style: offset\n  size: 10\n  in: body\n  param: paging.from\n",
			paging.Position{At: paging.OffsetAt{Offset: 30}}, "http://api.test/items?limit=10", nil, []contract.BodyValue{{Path: "paging.from", Value: int64(30)}}},
		{"page in body", "  style: page\n  in: body\n  param: page\n", paging.Position{At: paging.PageAt{Page: 3}}, "http://api.test/items", nil, []contract.BodyValue{{Path: "page", Value: int64(3)}}},
		{"cursor in body", "  style: cursor\n  next: next\n  in: body\n  param: variables.after\n",
			paging.Position{At: paging.CursorAt{Cursor: "abc"}}, "http://api.test/items", nil, []contract.BodyValue{{Path: "variables.after", Value: "abc"}}},
		{"cursor first page", "  style: cursor\n  next: next\n  in: body\n  param: variables.after\n",
			paging.Position{}, "http://api.test/items", nil, nil},
		{"cursor query template", "  style: cursor\n  next: next\n  param: id\n  template: \"gt.{value}\"\n",
			paging.Position{At: paging.CursorAt{Cursor: "42"}}, "http://api.test/items?id=gt.42", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := "name: r\nsource:\n  url: http://api.test/items\n  method: POST\npagination:\n" + tc.pagination +
				"target: {url: 'sqlite:x.db', table: t, key: [id]}\n"
			job := testJob(t, spec)
			p := &pager{job: job, src: &fakeSource{}}
			req, err := p.request(tc.pos, Window{})
			if err != nil {
				t.Fatal(err)
			}
			if req.URL != tc.url || !reflect.DeepEqual(req.Header, tc.header) || !reflect.DeepEqual(req.Body, tc.body) {
				t.Errorf("request %+v, want url %s header %v body %v", req, tc.url, tc.header, tc.body)
			}
		})
	}
}

// With incremental.end_param every request sends the run's start, rounded
// up to whole seconds, as its upper bound, in the form of the marks.
func TestRunWindowUpperBound(t *testing.T) {
	started := time.Date(2026, 11, 24, 16, 40, 5, 700_000_000, time.UTC)
	for _, tc := range []struct{ from, initial, want string }{
		{"2024-01-01T00:00:00Z", "", "2026-11-24T16:40:06Z"}, // the start rounded up
		{"2024-01-01T00:00:00.000+02:00", "", "2026-11-24T18:40:06.000+02:00"},
		{"", "2024-01-01T00:00:00Z", "2026-11-24T16:40:06Z"},
		{"1704067200", "", "1795538406"},
		{"1704067200000", "", "1795538406000"},
	} {
		job := testJob(t, "name: w\nsource: {url: 'http://api.test/x'}\nincremental: {field: ts, param: since, end_param: until, initial: '"+tc.initial+"'}\n"+
			"target: {url: 'sqlite:x.db', table: t, key: [id]}\n")
		w := runWindow(job, tc.from, started)
		if w.From != tc.from || w.To != tc.want {
			t.Errorf("from %q: window %+v, want To %q", tc.from, w, tc.want)
		}
		p := &pager{job: job, src: &fakeSource{}}
		req, err := p.request(paging.Position{}, w)
		if err != nil || !strings.Contains(req.URL, "until="+url.QueryEscape(tc.want)) {
			t.Errorf("from %q: request %s (%v), want until=%s", tc.from, req.URL, err, tc.want)
		}
	}
	// Without a mark or initial, only a format tells the marks' form: as
	// received, the first run has no upper bound.
	for format, want := range map[string]string{"as_received": "", "unix": "1795538406", "unix_ms": "1795538406000", "rfc3339": "2026-11-24T16:40:06Z"} {
		job := testJob(t, "name: w\nsource: {url: 'http://api.test/x'}\nincremental: {field: ts, param: since, end_param: until, format: "+format+"}\n"+
			"target: {url: 'sqlite:x.db', table: t, key: [id]}\n")
		if w := runWindow(job, "", started); w.To != want {
			t.Errorf("format %s, no mark: window %+v, want To %q", format, w, want)
		}
	}
	job := testJob(t, "name: w\nsource: {url: 'http://api.test/x'}\nincremental: {field: ts, param: since}\ntarget: {url: 'sqlite:x.db', table: t, key: [id]}\n")
	if w := runWindow(job, "2024-01-01T00:00:00Z", started); w.To != "" {
		t.Errorf("without end_param: window %+v, want no upper bound", w)
	}
}

// incremental.step splits [mark, run start) into windows of step, written
// in the form of the marks, the first starting at the mark as written.
func TestRunWindowsStep(t *testing.T) {
	started := time.Date(2024, 1, 3, 12, 0, 0, 500, time.UTC)
	job := testJob(t, "name: w\nsource: {url: 'http://api.test/x'}\nincremental: {field: ts, param: since, end_param: until, step: 1d}\n"+
		"target: {url: 'sqlite:x.db', table: t, key: [id]}\n")
	got := runWindows(job, "2024-01-01T00:00:00.000Z", started)
	want := []Window{{From: "2024-01-01T00:00:00.000Z", To: "2024-01-02T00:00:00.000Z"}, {From: "2024-01-02T00:00:00.000Z", To: "2024-01-03T00:00:00.000Z"},
		{From: "2024-01-03T00:00:00.000Z", To: "2024-01-03T12:00:01.000Z"}} // the start rounded up
	if !reflect.DeepEqual(got, want) {
		t.Errorf("windows %v, want %v", got, want)
	}
	if got := runWindows(job, "1704067200", started); len(got) != 3 || got[1] != (Window{From: "1704153600", To: "1704240000"}) || got[2].To != "1704283201" {
		t.Errorf("unix windows %v", got)
	}
	if got := runWindows(job, "", started); len(got) != 1 || got[0].From != "" {
		t.Errorf("no mark: windows %v, want the one unbounded window", got)
	}
}
