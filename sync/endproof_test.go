package sync

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sync/paging"
)

// epPager loads a job with the given records path and pagination block
// and returns its pager and the buffer its logger writes to.
func epPager(t *testing.T, records, pagination string) (*pager, *bytes.Buffer) {
	t.Helper()
	spec := "name: ep\nsource:\n  url: http://api.test/x\n"
	if records != "" {
		spec += "  records: " + fmt.Sprintf("%q", records) + "\n"
	}
	spec += "pagination:\n" + pagination + "target:\n  url: sqlite:out.db\n  table: t\n  key: [id]\n"
	job := testJob(t, spec)
	var logs bytes.Buffer
	return &pager{job: job, src: &fakeSource{records: job.Source.Records}, log: slog.New(slog.NewTextHandler(&logs, nil))}, &logs
}

// epResp is a 200 response with body and header pairs, its records read at
// the job's (plain) records path.
func epResp(t *testing.T, p *pager, body string, header ...string) (*contract.Response, string) {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Add(header[i], header[i+1])
	}
	resp, err := fakeResponse("http://api.test/x", p.job.Source.Records, body, h)
	if err != nil {
		t.Fatalf("records of %s: %v", body, err)
	}
	recs := resp.Records
	max := ""
	if field := p.job.Pagination.Field; field != "" {
		for _, r := range recs {
			if m, err := paging.MarkFromJSON(r.Get(field)); err == nil {
				max = paging.MaxMark(max, m)
			}
		}
	}
	return resp, max
}

// epRecs is n records with ids (and marks u) from..from+n-1; active every
// third one.
func epRecs(from, n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		id := from + i
		fmt.Fprintf(&b, `{"id":%d,"u":%d,"active":%v}`, id, id, id%3 == 0)
	}
	b.WriteByte(']')
	return b.String()
}

func epData(from, n int, meta string) string {
	if meta == "" {
		return `{"data":` + epRecs(from, n) + `}`
	}
	return `{"data":` + epRecs(from, n) + `,` + meta + `}`
}

const (
	epPageStyle = "  style: page\n  size_param: per_page\n  size: 25\n"
	epOffset    = "  style: offset\n  size: 25\n"
	epHWM       = "  style: hwm\n  field: u\n  param: since\n  size_param: limit\n  size: 25\n"
)

// The end decision per style: the style's own end signal, weighed against
// has_more, total_pages, total and a Link rel="next" header; a short page
// proven by fetching the next position (a cap, an end, or a contradiction).
func TestDecideEnd(t *testing.T) {
	type want struct {
		end    bool
		next   paging.Position // when not the end
		contra string          // substring of the contradiction
		capped int
		probes int
		err    string
	}
	tests := []struct {
		name, records, pag string
		pos                paging.Position
		body               string
		header             []string
		probe              string // body at the next position ("" = must not be asked)
		want               want
	}{
		// page style
		{"page full goes on", "data", epPageStyle, paging.Position{At: paging.PageAt{Page: 3}}, epData(51, 25, ""), nil, "",
			want{next: paging.Position{At: paging.PageAt{Page: 4}}}},
		{"page empty ends", "data", epPageStyle, paging.Position{At: paging.PageAt{Page: 5}}, epData(0, 0, ""), nil, "",
			want{end: true}},
		{"page empty but total_pages", "data", epPageStyle + "  total_pages: meta.total_pages\n", paging.Position{At: paging.PageAt{Page: 4}},
			epData(0, 0, `"meta":{"total_pages":10}`), nil, "",
			want{contra: "page 4 is empty but meta.total_pages says 10 pages"}},
		{"page full, last by total_pages", "data", epPageStyle + "  total_pages: meta.total_pages\n", paging.Position{At: paging.PageAt{Page: 4}},
			epData(76, 25, `"meta":{"total_pages":4}`), nil, "", want{end: true}},
		{"page empty but has_more", "data", epPageStyle + "  has_more: meta.more\n", paging.Position{At: paging.PageAt{Page: 2}},
			epData(0, 0, `"meta":{"more":true}`), nil, "", want{contra: "page 2 is empty but meta.more is true"}},
		{"page empty but X-Total-Count", "data", epPageStyle + "  total: header:X-Total-Count\n", paging.Position{At: paging.PageAt{Page: 3}},
			epData(0, 0, ""), []string{"X-Total-Count", "100"}, "",
			want{contra: "page 3 is empty but X-Total-Count says 100 records (50 up to this page)"}},
		{"page empty but Link next", "data", epPageStyle, paging.Position{At: paging.PageAt{Page: 3}},
			epData(0, 0, ""), []string{"Link", `<http://api.test/x?page=4>; rel="next"`}, "",
			want{contra: `page 3 is empty but the response has a Link rel="next" header`}},
		{"page has_more false on a full page ends", "data", epPageStyle + "  has_more: more\n", paging.Position{At: paging.PageAt{Page: 2}},
			epData(26, 25, `"more":false`), nil, "", want{end: true}},
		{"page has_more false but total_pages", "data", epPageStyle + "  has_more: more\n  total_pages: tp\n", paging.Position{At: paging.PageAt{Page: 2}},
			epData(26, 25, `"more":false,"tp":5`), nil, "", want{contra: "page 2: more is false but tp says 5 pages"}},
		{"page short, no signals, next empty: end", "data", epPageStyle, paging.Position{At: paging.PageAt{Page: 4}},
			epData(76, 10, ""), nil, epData(0, 0, ""), want{end: true, probes: 1}},
		{"page short, total says last: end without probe", "data", epPageStyle + "  total: total\n", paging.Position{At: paging.PageAt{Page: 4}},
			epData(76, 10, `"total":85`), nil, "", want{end: true}},
		{"page short but has_more, next empty", "data", epPageStyle + "  has_more: more\n", paging.Position{At: paging.PageAt{Page: 4}},
			epData(76, 10, `"more":true`), nil, epData(0, 0, ""),
			want{contra: "page 4 is short (10 of 25 records) but more is true", probes: 1}},
		{"page short, next full: came back short", "data", epPageStyle, paging.Position{At: paging.PageAt{Page: 4}},
			epData(76, 10, ""), nil, epData(101, 25, ""),
			want{contra: "page 4 is short (10 of 25 records) but page 5 has 25 records", probes: 1}},
		{"page capped", "data", strings.Replace(epPageStyle, "25", "100", 1) + "  total_pages: tp\n", paging.Position{At: paging.PageAt{Page: 1}},
			epData(1, 25, `"tp":4`), nil, epData(26, 25, `"tp":4`),
			want{next: paging.Position{At: paging.PageAt{Page: 2, Size: 25}}, capped: 25, probes: 1}},
		{"page under a known cap is full", "data", strings.Replace(epPageStyle, "25", "100", 1) + "  total_pages: tp\n", paging.Position{At: paging.PageAt{Page: 2, Size: 25}},
			epData(26, 25, `"tp":4`), nil, "", want{next: paging.Position{At: paging.PageAt{Page: 3, Size: 25}}}},
		{"page without size ends only when empty", "data", "  style: page\n", paging.Position{At: paging.PageAt{Page: 2}},
			epData(11, 3, ""), nil, "", want{next: paging.Position{At: paging.PageAt{Page: 3}}}},
		// offset style
		{"offset full", "data", epOffset, paging.Position{At: paging.OffsetAt{Offset: 50}}, epData(51, 25, ""), nil, "", want{next: paging.Position{At: paging.OffsetAt{Offset: 75}}}},
		{"offset short, total says last", "data", epOffset + "  total: total\n", paging.Position{At: paging.OffsetAt{Offset: 75}},
			epData(76, 10, `"total":85`), nil, "", want{end: true}},
		{"offset empty but total", "data", epOffset + "  total: total\n", paging.Position{At: paging.OffsetAt{Offset: 50}},
			epData(0, 0, `"total":100`), nil, "", want{contra: "offset 50 is empty but total says 100 records (50 up to this page)"}},
		{"offset short but total, next has the rest", "data", epOffset + "  total: total\n", paging.Position{At: paging.OffsetAt{Offset: 25}},
			epData(26, 10, `"total":100`), nil, epData(36, 25, `"total":100`),
			want{next: paging.Position{At: paging.OffsetAt{Offset: 35}}, probes: 1}},
		{"offset capped", "data", strings.Replace(epOffset, "25", "100", 1), paging.Position{At: paging.OffsetAt{Offset: 0}},
			epData(1, 25, ""), nil, epData(26, 25, ""), want{next: paging.Position{At: paging.OffsetAt{Offset: 25, Size: 25}}, capped: 25, probes: 1}},
		{"page short, next shorter: came back short", "data", epPageStyle, paging.Position{At: paging.PageAt{Page: 4}},
			epData(76, 10, ""), nil, epData(86, 3, ""),
			want{contra: "page 4 is short (10 of 25 records) but page 5 has 3 records", probes: 1}},
		{"page short but total, next shorter: came back short", "data", epPageStyle + "  total: header:X-Total-Count\n", paging.Position{At: paging.PageAt{Page: 4}},
			epData(76, 24, ""), []string{"X-Total-Count", "105"}, epData(101, 5, ""),
			want{contra: "page 4 is short (24 of 25 records) but X-Total-Count says 105 records", probes: 1}},
		{"offset short, next shorter: goes on without a cap", "data", epOffset, paging.Position{At: paging.OffsetAt{Offset: 75}},
			epData(76, 10, ""), nil, epData(86, 3, ""), want{next: paging.Position{At: paging.OffsetAt{Offset: 85}}, probes: 1}},
		{"offset short, next empty: end", "data", epOffset, paging.Position{At: paging.OffsetAt{Offset: 75}},
			epData(76, 10, ""), nil, epData(0, 0, ""), want{end: true, probes: 1}},

		// cursor and link styles
		{"cursor next", "data", "  style: cursor\n  next: next\n", paging.Position{}, epData(1, 5, `"next":"c2"`), nil, "",
			want{next: paging.Position{At: paging.CursorAt{Cursor: "c2"}}}},
		{"cursor no next ends", "data", "  style: cursor\n  next: next\n", paging.Position{At: paging.CursorAt{Cursor: "c2"}}, epData(1, 5, `"next":null`), nil, "",
			want{end: true}},
		{"cursor no next but has_more", "data", "  style: cursor\n  next: next\n  has_more: more\n", paging.Position{At: paging.CursorAt{Cursor: "c2"}},
			epData(1, 5, `"next":null,"more":true`), nil, "",
			want{contra: "cursor c2 has no next cursor (at next) but more is true"}},
		{"cursor has_more false ends", "data", "  style: cursor\n  next: data.@reverse.0.id\n  has_more: more\n", paging.Position{},
			epData(1, 5, `"more":false`), nil, "", want{end: true}},
		{"link no next ends", "", "  style: link\n", paging.Position{At: paging.LinkAt{URL: "http://api.test/x?page=2"}}, epRecs(1, 3), nil, "",
			want{end: true}},
		{"link next", "", "  style: link\n", paging.Position{}, epRecs(1, 3), []string{"Link", `</x?page=2>; rel="next"`}, "",
			want{next: paging.Position{At: paging.LinkAt{URL: "http://api.test/x?page=2"}}}},
		{"link no next but has_more", "", "  style: link\n  has_more: 0.more\n", paging.Position{}, `[{"id":1,"more":true}]`, nil, "",
			want{contra: `first page has no Link rel="next" but 0.more is true`}},

		// hwm style
		{"hwm full goes on", "data", epHWM, paging.Position{At: paging.HWMAt{Mark: "1"}}, epData(1, 25, ""), nil, "", want{next: paging.Position{At: paging.HWMAt{Mark: "25"}}}},
		{"hwm short, next makes no progress: end", "data", epHWM, paging.Position{At: paging.HWMAt{Mark: "1"}}, epData(1, 10, ""), nil,
			epData(10, 1, ""), want{end: true, probes: 1}},
		{"hwm capped", "data", strings.Replace(epHWM, "25", "100", 1), paging.Position{At: paging.HWMAt{Mark: "1"}}, epData(1, 25, ""), nil,
			epData(25, 25, ""), want{next: paging.Position{At: paging.HWMAt{Mark: "25", Size: 25}}, capped: 25, probes: 1}},
		{"hwm no progress, short: end", "data", epHWM, paging.Position{At: paging.HWMAt{Mark: "7"}}, epData(7, 1, ""), nil, "", want{end: true}},
		{"hwm full without progress", "data", epHWM, paging.Position{At: paging.HWMAt{Mark: "7"}},
			`{"data":[` + strings.TrimSuffix(strings.Repeat(`{"id":1,"u":7},`, 25), ",") + `]}`, nil, "",
			want{err: "a full page of 25 records made no progress past mark 7"}},
		{"hwm full without progress under an adopted cap: asked again at size", "data", epHWM, paging.Position{At: paging.HWMAt{Mark: "7", Size: 2}},
			`{"data":[{"id":1,"u":7},{"id":2,"u":7}]}`, nil, epData(1, 25, ""), want{next: paging.Position{At: paging.HWMAt{Mark: "7"}}, probes: 1}},
		{"hwm full without progress under a real cap", "data", epHWM, paging.Position{At: paging.HWMAt{Mark: "7", Size: 2}},
			`{"data":[{"id":1,"u":7},{"id":2,"u":7}]}`, nil, `{"data":[{"id":1,"u":7},{"id":2,"u":7}]}`,
			want{err: "a full page of 2 records made no progress past mark 7, and the API serves at most 2 per page", probes: 1}},
		{"hwm empty but has_more", "data", epHWM + "  has_more: more\n", paging.Position{At: paging.HWMAt{Mark: "7"}},
			epData(0, 0, `"more":true`), nil, "", want{contra: "mark 7 is empty but more is true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := epPager(t, tt.records, tt.pag)
			resp, max := epResp(t, p, tt.body, tt.header...)
			probes := 0
			probe := func(pos paging.Position) (*contract.Response, string, error) {
				probes++
				if tt.probe == "" {
					t.Fatalf("probed %+v", pos)
				}
				r, m := epResp(t, p, tt.probe)
				return r, m, nil
			}
			got, err := p.decideEnd(tt.pos, resp, max, nil, probe)
			if tt.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want.err) {
					t.Fatalf("error %v, want %q", err, tt.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want.contra != "":
				if !strings.Contains(got.contra, tt.want.contra) {
					t.Errorf("contradiction %q, want %q (result %+v)", got.contra, tt.want.contra, got)
				}
			case got.contra != "":
				t.Errorf("unexpected contradiction %q", got.contra)
			case tt.want.end:
				if !got.next.End {
					t.Errorf("next %+v, want the end", got.next)
				}
			case got.next != tt.want.next:
				t.Errorf("next %+v, want %+v", got.next, tt.want.next)
			}
			if got.capped != tt.want.capped || probes != tt.want.probes {
				t.Errorf("capped %d after %d probes, want %d after %d", got.capped, probes, tt.want.capped, tt.want.probes)
			}
			if got.ahead != nil && (got.next.End || got.contra != "") {
				t.Errorf("a response ahead of the end or of a contradiction")
			}
		})
	}
}

// A full first page that ends a cursor walk is logged as a warning: its
// end signal was never seen present. A full last page after earlier
// pages, or one whose total confirms the end, is not.
func TestDecideEndWarnsFullLastPage(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra string
		pos   paging.Position
		body  string
		warn  bool
	}{
		{"first page", "", paging.Position{}, `"next":null`, true},
		{"later page", "", paging.Position{At: paging.CursorAt{Cursor: "c5"}}, `"next":null`, false},
		{"first page, total confirms", "  total: total\n", paging.Position{}, `"next":null,"total":5`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, logs := epPager(t, "data", "  style: cursor\n  next: next\n  size_param: limit\n  size: 5\n"+tt.extra)
			resp, _ := epResp(t, p, epData(1, 5, tt.body))
			got, err := p.decideEnd(tt.pos, resp, "", nil, nil)
			if err != nil || !got.next.End {
				t.Fatalf("%+v, %v: want the end", got, err)
			}
			if warned := strings.Contains(logs.String(), "the first page is full"); warned != tt.warn {
				t.Errorf("warned %v, want %v: %s", warned, tt.warn, logs.String())
			}
		})
	}
}

func TestTotalPagesFromTotal(t *testing.T) {
	p, _ := epPager(t, "data", epPageStyle+"  total: header:X-Total-Count\n")
	resp, _ := epResp(t, p, epData(1, 25, ""), "X-Total-Count", "110")
	if got := totalPages(p.job, resp); got != 5 {
		t.Errorf("total pages %d, want 5 (110 records in pages of 25)", got)
	}
}

// epCapAPI serves n records by offset or page, at most cap per page whatever
// the request asks, with total and total_pages computed for the cap.
// epCapAPI serves n records in pages of at most cap, by page or offset,
// with total and total_pages.
func epCapAPI(n, cap int) *fakeSource {
	return &fakeSource{records: "data", serve: func(_ context.Context, u *url.URL) (string, error) {
		q := u.Query()
		var size, from int
		fmt.Sscan(q.Get("limit"), &size)
		size = min(size, cap)
		if p := q.Get("page"); p != "" {
			var page int
			fmt.Sscan(p, &page)
			from = (page - 1) * size
		} else {
			fmt.Sscan(q.Get("offset"), &from)
		}
		k := max(0, min(size, n-from))
		return fmt.Sprintf(`{"data":%s,"total":%d,"total_pages":%d}`, epRecs(from+1, k), n, (n+cap-1)/cap), nil
	}}
}

// The pipeline under a page-size cap with requests in flight: every record
// comes out exactly once, in order, and the walk ends once.
func TestPipelineAdaptsToCap(t *testing.T) {
	for _, tt := range []struct{ name, pag string }{
		{"offset", "  style: offset\n  size_param: limit\n  size: 100\n"},
		{"offset total", "  style: offset\n  size_param: limit\n  size: 100\n  total: total\n"},
		{"page", "  style: page\n  size_param: limit\n  size: 100\n"},
		{"page total_pages", "  style: page\n  size_param: limit\n  size: 100\n  total_pages: total_pages\n"},
	} {
		for _, workers := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, workers), func(t *testing.T) {
				src := epCapAPI(260, 25)
				spec := fmt.Sprintf("name: ep\nsource:\n  url: %s\n  records: data\n  concurrency: %d\npagination:\n%s"+
					"retry:\n  attempts: 2\n  min_wait: 1ms\n  max_wait: 2ms\ntarget:\n  url: sqlite:out.db\n  table: t\n  key: [id]\n"+
					"  columns:\n    id: {path: id, type: integer}\n", "http://api.test/x", workers, tt.pag)
				job := testJob(t, spec)
				logs := &lockedWriter{w: &bytes.Buffer{}} // pipeline goroutines may still log after the last page
				log := slog.New(slog.NewTextHandler(logs, nil))
				e := &Engine{Job: job, Source: src, Logger: log}
				start := (&pager{job: job, src: e.Source, log: log}).start("")
				next := 1
				ends := 0
				for fp := range e.pipeline(context.Background(), start, Window{}, nil, 0, "") {
					if fp.err != nil {
						t.Fatalf("page %+v: %v", fp.pos, fp.err)
					}
					for _, r := range fp.resp.Records {
						if id := int(r.Get("id").Int()); id != next {
							t.Fatalf("record %d after %d at %+v", id, next-1, fp.pos)
						}
						next++
					}
					if fp.next.End {
						ends++
					}
				}
				if next != 261 || ends != 1 {
					t.Errorf("%d records, %d ends; want 260 and 1", next-1, ends)
				}
				if !strings.Contains(logs.String(), "at most 25 records per page") {
					t.Errorf("no warning naming the cap: %s", logs.String())
				}
				t.Logf("%d requests", len(src.requests()))
			})
		}
	}
}

// An empty page ending a page or offset walk after a full one proves too
// little for a sweep unless a count or flag confirms it; a short page, the
// first page and another style's own end signal prove
// (docs/deletions.md, "What proves absence").
func TestDecideEndWeakProof(t *testing.T) {
	tests := []struct {
		name, pag string
		pos       paging.Position
		body      string
		probe     string
		weak      bool
	}{
		{"page empty after a full page", epPageStyle, paging.Position{At: paging.PageAt{Page: 5}}, epData(0, 0, ""), "", true},
		{"offset empty after a full page", "  style: offset\n  size: 25\n", paging.Position{At: paging.OffsetAt{Offset: 100}}, epData(0, 0, ""), "", true},
		{"page empty, total confirms", epPageStyle + "  total: total\n", paging.Position{At: paging.PageAt{Page: 5}}, epData(0, 0, `"total":100`), "", false},
		{"page empty, has_more false confirms", epPageStyle + "  has_more: more\n", paging.Position{At: paging.PageAt{Page: 5}}, epData(0, 0, `"more":false`), "", false},
		{"page empty, total_pages confirms", epPageStyle + "  total_pages: tp\n", paging.Position{At: paging.PageAt{Page: 5}}, epData(0, 0, `"tp":4`), "", false},
		{"first page empty: a mass change, not weak", epPageStyle, paging.Position{At: paging.PageAt{Page: 1}}, epData(0, 0, ""), "", false},
		{"short page proven by an empty next page", epPageStyle, paging.Position{At: paging.PageAt{Page: 4}}, epData(76, 10, ""), epData(0, 0, ""), false},
		{"cursor without a next cursor", "  style: cursor\n  next: next\n", paging.Position{At: paging.CursorAt{Cursor: "c"}}, epData(0, 0, `"next":null`), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := epPager(t, "data", tt.pag)
			resp, max := epResp(t, p, tt.body)
			probe := func(paging.Position) (*contract.Response, string, error) {
				if tt.probe == "" {
					t.Fatal("probed")
				}
				r, m := epResp(t, p, tt.probe)
				return r, m, nil
			}
			got, err := p.decideEnd(tt.pos, resp, max, nil, probe)
			if err != nil || !got.next.End || got.contra != "" {
				t.Fatalf("not the end: %+v, %v", got, err)
			}
			if (got.weak != "") != tt.weak {
				t.Errorf("weak %q, want weak %v", got.weak, tt.weak)
			}
		})
	}
}
