package sync

import (
	"reflect"
	"testing"
)

// The position goes where pagination.in says, written by the template: a
// page number or offset in a body is a number unless a template makes it
// text; {end} is the inclusive last offset; size stays a query parameter.
func TestRequestPlacement(t *testing.T) {
	for _, tc := range []struct {
		name, pagination string
		pos              Position
		url              string
		header           map[string]string
		body             []BodyValue
	}{
		{"offset header template", "  style: offset\n  size: 25\n  in: header\n  param: Range\n  template: \"items={offset}-{end}\"\n",
			Position{Offset: 50}, "http://api.test/items?limit=25", map[string]string{"Range": "items=50-74"}, nil},
		{"offset in body", "  style: offset\n  size: 10\n  in: body\n  param: paging.from\n",
			Position{Offset: 30}, "http://api.test/items?limit=10", nil, []BodyValue{{Path: "paging.from", Value: int64(30)}}},
		{"page in body", "  style: page\n  in: body\n  param: page\n", Position{Page: 3}, "http://api.test/items", nil, []BodyValue{{Path: "page", Value: int64(3)}}},
		{"cursor in body", "  style: cursor\n  next: next\n  in: body\n  param: variables.after\n",
			Position{Cursor: "abc"}, "http://api.test/items", nil, []BodyValue{{Path: "variables.after", Value: "abc"}}},
		{"cursor first page", "  style: cursor\n  next: next\n  in: body\n  param: variables.after\n",
			Position{}, "http://api.test/items", nil, nil},
		{"cursor query template", "  style: cursor\n  next: next\n  param: id\n  template: \"gt.{value}\"\n",
			Position{Cursor: "42"}, "http://api.test/items?id=gt.42", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := "name: r\nsource:\n  url: http://api.test/items\n  method: POST\npagination:\n" + tc.pagination +
				"target: {url: 'sqlite:x.db', table: t, key: [id]}\n"
			job := testJob(t, spec)
			p := &pager{job: job, src: &fakeSource{}}
			req, err := p.request(tc.pos, "")
			if err != nil {
				t.Fatal(err)
			}
			if req.URL != tc.url || !reflect.DeepEqual(req.Header, tc.header) || !reflect.DeepEqual(req.Body, tc.body) {
				t.Errorf("request %+v, want url %s header %v body %v", req, tc.url, tc.header, tc.body)
			}
		})
	}
}
