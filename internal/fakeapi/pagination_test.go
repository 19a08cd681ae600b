package fakeapi

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"
)

// pagers is every list route with its client.
var pagers = []struct {
	name   string
	size   string // the route's page size parameter
	byTime bool   // ordered by (updated_at, id) rather than id
	walk   pager
}{
	{"page", "per_page", false, pageByNumber},
	{"offset", "limit", false, pageByOffset},
	{"cursor", "limit", false, pageByCursor},
	{"cursor-url", "limit", false, pageByCursorURL},
	{"cursor-header", "limit", false, pageByCursorHeader},
	{"link", "per_page", false, pageByLink},
	{"link-relative", "per_page", false, func(t *testing.T, base string, q url.Values) []Record {
		q2 := url.Values{"relative": {"1"}}
		for k, v := range q {
			q2[k] = v
		}
		return pageByLink(t, base, q2)
	}},
	{"hwm", "limit", true, pageByHWM},
	{"all", "", false, pageAll},
}

// expected returns the ids a full walk must yield, in order.
func expected(a *API, since time.Time, byTime bool) []int {
	recs := slices.DeleteFunc(a.Records(), func(r Record) bool { return r.UpdatedAt.Before(since) })
	if byTime {
		slices.SortFunc(recs, func(x, y Record) int {
			return cmp.Or(x.UpdatedAt.Compare(y.UpdatedAt), cmp.Compare(x.ID, y.ID))
		})
	}
	ids := make([]int, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return ids
}

func ids(recs []Record) []int {
	out := make([]int, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// checkWalk fails unless got is exactly want: no duplicate, no miss, in order.
func checkWalk(t *testing.T, got, want []int) {
	t.Helper()
	seen := map[int]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("record %d returned twice", id)
		}
		seen[id] = true
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %d records, want %d (first got %v, first want %v)",
			len(got), len(want), got[:min(5, len(got))], want[:min(5, len(want))])
	}
}

func TestPaginationCoversEverythingOnce(t *testing.T) {
	cases := []struct {
		name  string
		opts  Options
		size  int    // 0 = route default
		since string // updated_since, "" = none
	}{
		{"default size", Options{}, 0, ""},
		{"size not dividing total", Options{Records: 1000}, 37, ""},
		{"size equal to total", Options{Records: 200}, 200, ""},
		{"size above total", Options{Records: 10}, 500, ""},
		{"size one", Options{Records: 23}, 1, ""},
		{"empty", Options{Records: -1}, 10, ""},
		{"shared timestamps", Options{Records: 1000, SameTimestampEvery: 7}, 50, ""},
		{"updated_since", Options{Records: 500}, 30, "2024-01-01T00:05:00Z"},
		{"updated_since past the end", Options{Records: 100}, 30, "2030-01-01T00:00:00Z"},
		{"updated_since with offset zone", Options{Records: 300}, 25, "2024-01-01T01:02:00+01:00"},
	}
	for _, c := range cases {
		for _, p := range pagers {
			t.Run(c.name+"/"+p.name, func(t *testing.T) {
				a, srv := newServer(t, c.opts)
				size := c.size
				if p.byTime && size == 1 {
					// With >= a page of one is always the boundary
					// record again: keyset paging needs a size of 2+.
					size = 2
				}
				q := url.Values{}
				if size > 0 && p.size != "" {
					q.Set(p.size, fmt.Sprint(size))
				}
				var since time.Time
				if c.since != "" {
					q.Set("updated_since", c.since)
					since, _ = time.Parse(time.RFC3339, c.since)
				}
				checkWalk(t, ids(p.walk(t, srv.URL, q)), expected(a, since, p.byTime))
			})
		}
	}
}

func TestPaginationAfterMutation(t *testing.T) {
	// Walks after updates, adds and deletes still see every record once;
	// the hwm walk sees updated records last.
	for _, p := range pagers {
		t.Run(p.name, func(t *testing.T) {
			a, srv := newServer(t, Options{Records: 300})
			a.Update(5, func(r *Record) { r.Name = "changed" })
			a.Update(150, nil)
			a.Delete(7)
			a.Delete(300)
			a.Add(12)
			q := url.Values{}
			if p.size != "" {
				q.Set(p.size, "40")
			}
			got := ids(p.walk(t, srv.URL, q))
			checkWalk(t, got, expected(a, time.Time{}, p.byTime))
			if p.byTime && (got[len(got)-14] != 5 || got[len(got)-13] != 150) {
				t.Fatalf("hwm order does not end with the updated then added records: %v", got[len(got)-15:])
			}
		})
	}
}

func TestHWMBoundaryRequestReturnsWholeGroup(t *testing.T) {
	// 10 records share each timestamp; a page of 25 ends inside the third
	// group. Re-requesting with since = that page's max updated_at returns
	// the whole third group again (>=), the first five being duplicates.
	_, srv := newServer(t, Options{Records: 100, SameTimestampEvery: 10})
	var first, second struct {
		Data []Record `json:"data"`
	}
	getJSON(t, srv.URL+"/hwm?limit=25", &first)
	mark := first.Data[24].UpdatedAt.Format(time.RFC3339)
	getJSON(t, srv.URL+"/hwm?limit=25&since="+url.QueryEscape(mark), &second)
	if got := ids(second.Data); got[0] != 21 || got[24] != 45 {
		t.Fatalf("second page = %v, want 21..45", got)
	}
	// More records per timestamp than the limit: a full page with no
	// progress, which a client must report.
	var stuck struct {
		Data []Record `json:"data"`
	}
	getJSON(t, srv.URL+"/hwm?limit=5&since="+url.QueryEscape(mark), &stuck)
	if d := stuck.Data; len(d) != 5 || !d[0].UpdatedAt.Equal(d[4].UpdatedAt) {
		t.Fatalf("want 5 records sharing one timestamp, got %v", ids(d))
	}
}
