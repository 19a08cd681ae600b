package sync

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
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
	job, err := Load([]byte(spec), filepath.Join(t.TempDir(), "job.yaml"), env(nil))
	if err != nil {
		t.Fatalf("load: %v\n%s", err, spec)
	}
	var logs bytes.Buffer
	f := NewFetcher(job, slog.New(slog.NewTextHandler(&logs, nil)))
	return &pager{job: job, src: f, log: f.logger}, &logs
}

// epResp is a 200 response with body and header pairs, its records read as
// Fetch reads them.
func epResp(t *testing.T, p *pager, body string, header ...string) (*Response, string) {
	t.Helper()
	recs, err := p.src.(*Fetcher).records([]byte(body))
	if err != nil {
		t.Fatalf("records of %s: %v", body, err)
	}
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Add(header[i], header[i+1])
	}
	max := ""
	if field := p.job.Pagination.Field; field != "" {
		for _, r := range recs {
			if m, err := markFromJSON(r.Get(field)); err == nil {
				max = MaxMark(max, m)
			}
		}
	}
	return &Response{URL: "http://api.test/x", Status: 200, Header: h, Body: []byte(body), Records: recs,
		Raw: p.src.(*Fetcher).rawCount([]byte(body), recs)}, max
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
		next   Position // when not the end
		contra string   // substring of the contradiction
		capped int
		probes int
		err    string
	}
	tests := []struct {
		name, records, pag string
		pos                Position
		body               string
		header             []string
		probe              string // body at the next position ("" = must not be asked)
		want               want
	}{
		// page style
		{"page full goes on", "data", epPageStyle, Position{Page: 3}, epData(51, 25, ""), nil, "",
			want{next: Position{Page: 4}}},
		{"page empty ends", "data", epPageStyle, Position{Page: 5}, epData(0, 0, ""), nil, "",
			want{end: true}},
		{"page empty but total_pages", "data", epPageStyle + "  total_pages: meta.total_pages\n", Position{Page: 4},
			epData(0, 0, `"meta":{"total_pages":10}`), nil, "",
			want{contra: "page 4 is empty but meta.total_pages says 10 pages"}},
		{"page full, last by total_pages", "data", epPageStyle + "  total_pages: meta.total_pages\n", Position{Page: 4},
			epData(76, 25, `"meta":{"total_pages":4}`), nil, "", want{end: true}},
		{"page empty but has_more", "data", epPageStyle + "  has_more: meta.more\n", Position{Page: 2},
			epData(0, 0, `"meta":{"more":true}`), nil, "", want{contra: "page 2 is empty but meta.more is true"}},
		{"page empty but X-Total-Count", "data", epPageStyle + "  total: header:X-Total-Count\n", Position{Page: 3},
			epData(0, 0, ""), []string{"X-Total-Count", "100"}, "",
			want{contra: "page 3 is empty but X-Total-Count says 100 records (50 up to this page)"}},
		{"page empty but Link next", "data", epPageStyle, Position{Page: 3},
			epData(0, 0, ""), []string{"Link", `<http://api.test/x?page=4>; rel="next"`}, "",
			want{contra: `page 3 is empty but the response has a Link rel="next" header`}},
		{"page has_more false on a full page ends", "data", epPageStyle + "  has_more: more\n", Position{Page: 2},
			epData(26, 25, `"more":false`), nil, "", want{end: true}},
		{"page has_more false but total_pages", "data", epPageStyle + "  has_more: more\n  total_pages: tp\n", Position{Page: 2},
			epData(26, 25, `"more":false,"tp":5`), nil, "", want{contra: "page 2: more is false but tp says 5 pages"}},
		{"page short, no signals, next empty: end", "data", epPageStyle, Position{Page: 4},
			epData(76, 10, ""), nil, epData(0, 0, ""), want{end: true, probes: 1}},
		{"page short, total says last: end without probe", "data", epPageStyle + "  total: total\n", Position{Page: 4},
			epData(76, 10, `"total":85`), nil, "", want{end: true}},
		{"page short but has_more, next empty", "data", epPageStyle + "  has_more: more\n", Position{Page: 4},
			epData(76, 10, `"more":true`), nil, epData(0, 0, ""),
			want{contra: "page 4 is short (10 of 25 records) but more is true", probes: 1}},
		{"page short, next full: came back short", "data", epPageStyle, Position{Page: 4},
			epData(76, 10, ""), nil, epData(101, 25, ""),
			want{contra: "page 4 is short (10 of 25 records) but page 5 has 25 records", probes: 1}},
		{"page capped", "data", strings.Replace(epPageStyle, "25", "100", 1) + "  total_pages: tp\n", Position{Page: 1},
			epData(1, 25, `"tp":4`), nil, epData(26, 25, `"tp":4`),
			want{next: Position{Page: 2, Size: 25}, capped: 25, probes: 1}},
		{"page under a known cap is full", "data", strings.Replace(epPageStyle, "25", "100", 1) + "  total_pages: tp\n", Position{Page: 2, Size: 25},
			epData(26, 25, `"tp":4`), nil, "", want{next: Position{Page: 3, Size: 25}}},
		{"page without size ends only when empty", "data", "  style: page\n", Position{Page: 2},
			epData(11, 3, ""), nil, "", want{next: Position{Page: 3}}},
		{"filtered records count the raw array", "data.#(active==true)#", epPageStyle, Position{Page: 1},
			epData(1, 25, ""), nil, "", want{next: Position{Page: 2}}},
		{"flattened records count the raw array", "#.c|@flatten", epPageStyle, Position{Page: 1},
			`[` + strings.Repeat(`{"c":[]},`, 24) + `{"c":[{"id":1}]}]`, nil, "", want{next: Position{Page: 2}}},

		// offset style
		{"offset full", "data", epOffset, Position{Offset: 50}, epData(51, 25, ""), nil, "", want{next: Position{Offset: 75}}},
		{"offset short, total says last", "data", epOffset + "  total: total\n", Position{Offset: 75},
			epData(76, 10, `"total":85`), nil, "", want{end: true}},
		{"offset empty but total", "data", epOffset + "  total: total\n", Position{Offset: 50},
			epData(0, 0, `"total":100`), nil, "", want{contra: "offset 50 is empty but total says 100 records (50 up to this page)"}},
		{"offset short but total, next has the rest", "data", epOffset + "  total: total\n", Position{Offset: 25},
			epData(26, 10, `"total":100`), nil, epData(36, 25, `"total":100`),
			want{next: Position{Offset: 35}, probes: 1}},
		{"offset capped", "data", strings.Replace(epOffset, "25", "100", 1), Position{Offset: 0},
			epData(1, 25, ""), nil, epData(26, 25, ""), want{next: Position{Offset: 25, Size: 25}, capped: 25, probes: 1}},
		{"page short, next shorter: came back short", "data", epPageStyle, Position{Page: 4},
			epData(76, 10, ""), nil, epData(86, 3, ""),
			want{contra: "page 4 is short (10 of 25 records) but page 5 has 3 records", probes: 1}},
		{"page short but total, next shorter: came back short", "data", epPageStyle + "  total: header:X-Total-Count\n", Position{Page: 4},
			epData(76, 24, ""), []string{"X-Total-Count", "105"}, epData(101, 5, ""),
			want{contra: "page 4 is short (24 of 25 records) but X-Total-Count says 105 records", probes: 1}},
		{"offset short, next shorter: goes on without a cap", "data", epOffset, Position{Offset: 75},
			epData(76, 10, ""), nil, epData(86, 3, ""), want{next: Position{Offset: 85}, probes: 1}},
		{"offset short, next empty: end", "data", epOffset, Position{Offset: 75},
			epData(76, 10, ""), nil, epData(0, 0, ""), want{end: true, probes: 1}},

		// cursor and link styles
		{"cursor next", "data", "  style: cursor\n  next: next\n", Position{}, epData(1, 5, `"next":"c2"`), nil, "",
			want{next: Position{Cursor: "c2"}}},
		{"cursor no next ends", "data", "  style: cursor\n  next: next\n", Position{Cursor: "c2"}, epData(1, 5, `"next":null`), nil, "",
			want{end: true}},
		{"cursor no next but has_more", "data", "  style: cursor\n  next: next\n  has_more: more\n", Position{Cursor: "c2"},
			epData(1, 5, `"next":null,"more":true`), nil, "",
			want{contra: "cursor c2 has no next cursor (at next) but more is true"}},
		{"cursor has_more false ends", "data", "  style: cursor\n  next: data.@reverse.0.id\n  has_more: more\n", Position{},
			epData(1, 5, `"more":false`), nil, "", want{end: true}},
		{"link no next ends", "", "  style: link\n", Position{URL: "http://api.test/x?page=2"}, epRecs(1, 3), nil, "",
			want{end: true}},
		{"link next", "", "  style: link\n", Position{}, epRecs(1, 3), []string{"Link", `</x?page=2>; rel="next"`}, "",
			want{next: Position{URL: "http://api.test/x?page=2"}}},
		{"link no next but has_more", "", "  style: link\n  has_more: 0.more\n", Position{}, `[{"id":1,"more":true}]`, nil, "",
			want{contra: `first page has no Link rel="next" but 0.more is true`}},

		// hwm style
		{"hwm full goes on", "data", epHWM, Position{Mark: "1"}, epData(1, 25, ""), nil, "", want{next: Position{Mark: "25"}}},
		{"hwm short, next makes no progress: end", "data", epHWM, Position{Mark: "1"}, epData(1, 10, ""), nil,
			epData(10, 1, ""), want{end: true, probes: 1}},
		{"hwm capped", "data", strings.Replace(epHWM, "25", "100", 1), Position{Mark: "1"}, epData(1, 25, ""), nil,
			epData(25, 25, ""), want{next: Position{Mark: "25", Size: 25}, capped: 25, probes: 1}},
		{"hwm no progress, short: end", "data", epHWM, Position{Mark: "7"}, epData(7, 1, ""), nil, "", want{end: true}},
		{"hwm full without progress", "data", epHWM, Position{Mark: "7"},
			`{"data":[` + strings.TrimSuffix(strings.Repeat(`{"id":1,"u":7},`, 25), ",") + `]}`, nil, "",
			want{err: "a full page of 25 records made no progress past mark 7"}},
		{"hwm full without progress under an adopted cap: asked again at size", "data", epHWM, Position{Mark: "7", Size: 2},
			`{"data":[{"id":1,"u":7},{"id":2,"u":7}]}`, nil, epData(1, 25, ""), want{next: Position{Mark: "7"}, probes: 1}},
		{"hwm full without progress under a real cap", "data", epHWM, Position{Mark: "7", Size: 2},
			`{"data":[{"id":1,"u":7},{"id":2,"u":7}]}`, nil, `{"data":[{"id":1,"u":7},{"id":2,"u":7}]}`,
			want{err: "a full page of 2 records made no progress past mark 7, and the API serves at most 2 per page", probes: 1}},
		{"hwm empty but has_more", "data", epHWM + "  has_more: more\n", Position{Mark: "7"},
			epData(0, 0, `"more":true`), nil, "", want{contra: "mark 7 is empty but more is true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := epPager(t, tt.records, tt.pag)
			resp, max := epResp(t, p, tt.body, tt.header...)
			probes := 0
			probe := func(pos Position) (*Response, string, error) {
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

// A full last page of a cursor or link walk is logged as a warning.
func TestDecideEndWarnsFullLastPage(t *testing.T) {
	p, logs := epPager(t, "data", "  style: cursor\n  next: next\n  size_param: limit\n  size: 5\n")
	resp, _ := epResp(t, p, epData(1, 5, `"next":null`))
	got, err := p.decideEnd(Position{}, resp, "", nil, nil)
	if err != nil || !got.next.End {
		t.Fatalf("%+v, %v: want the end", got, err)
	}
	if !strings.Contains(logs.String(), "the last page is full") {
		t.Errorf("no warning: %s", logs.String())
	}
}

func TestPlainPrefix(t *testing.T) {
	for _, tt := range []struct {
		path, prefix string
		plain        bool
	}{
		{"", "", true},
		{"data", "data", true},
		{"data.items", "data.items", true},
		{`a\.b.c`, `a\.b.c`, true},
		{"data.#(active==true)#", "data", false},
		{"#.comments|@flatten", "", false},
		{"data.items|@reverse", "data.items", false},
		{"data.@reverse", "data", false},
		{"results.*.x", "results", false},
	} {
		prefix, plain := plainPrefix(tt.path)
		if prefix != tt.prefix || plain != tt.plain {
			t.Errorf("plainPrefix(%q) = %q, %v; want %q, %v", tt.path, prefix, plain, tt.prefix, tt.plain)
		}
	}
}

// 204 is an empty page; a 2xx body that is not JSON at all is permanent
// (one request); JSON with a wrong content type is still JSON.
func TestFetchEndProofBodies(t *testing.T) {
	tests := []struct {
		name     string
		respond  func(w http.ResponseWriter)
		code     int // 0: success
		records  int
		requests int
		says     string
	}{
		{"204", func(w http.ResponseWriter) { w.WriteHeader(204) }, 0, 0, 1, ""},
		{"html login page", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte("<!DOCTYPE html><html><body>Sign in</body></html>"))
		}, ExitPermanent, 0, 1, "HTTP 200 body is not JSON (Content-Type text/html): <!DOCTYPE html>"},
		{"plain text", func(w http.ResponseWriter) { _, _ = w.Write([]byte("Unauthorized")) }, ExitPermanent, 0, 1, "not JSON"},
		{"HTML served as JSON", func(w http.ResponseWriter) { writeJSON(w, 200, "<html>oops</html>") }, ExitPermanent, 0, 1, "not JSON"},
		{"truncated JSON", func(w http.ResponseWriter) { writeJSON(w, 200, `{"data":[{"id":1},`) }, ExitTransient, 0, 3, "invalid JSON body"},
		{"truncated JSON labelled HTML", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`{"data":[{"id":1},`))
		}, ExitPermanent, 0, 1, "not JSON"},
		{"JSON labelled HTML", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(okPage))
		}, 0, 2, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) { tt.respond(w) })
			f, _ := newTestFetcher(t, fetchSpec(srv.URL, "", ""), nil)
			resp, err := f.Fetch(context.Background(), srv.URL)
			if n := len(srv.requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			if tt.code == 0 {
				if err != nil || len(resp.Records) != tt.records || resp.Raw != tt.records {
					t.Fatalf("%v; want %d records", err, tt.records)
				}
				return
			}
			if err == nil || ExitCode(err) != tt.code || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %v (exit %d), want exit %d saying %q", err, ExitCode(err), tt.code, tt.says)
			}
		})
	}
}

func TestNotJSON(t *testing.T) {
	for _, tt := range []struct {
		body, ct string
		want     bool
	}{
		{`{"data":[`, "application/json", false},
		{`  [1,`, "", false},
		{`tr`, "", false},
		{`nul`, "application/json", false},
		{``, "application/json", false},
		{`this is not JSON`, "application/json", true},
		{`<html>`, "", true},
		{`{"data":`, "text/html; charset=utf-8", true},
		{"\ufeff<?xml version=\"1.0\"?>", "application/xml", true},
		{`Unauthorized`, "text/plain", true},
	} {
		if got := notJSON([]byte(tt.body), tt.ct); got != tt.want {
			t.Errorf("notJSON(%q, %q) = %v, want %v", tt.body, tt.ct, got, tt.want)
		}
	}
}

// pagination.total with size gives the progress bar its number of pages.
func TestTotalPagesFromTotal(t *testing.T) {
	p, _ := epPager(t, "data", epPageStyle+"  total: header:X-Total-Count\n")
	resp, _ := epResp(t, p, epData(1, 25, ""), "X-Total-Count", "110")
	if got := totalPages(p.job, resp); got != 5 {
		t.Errorf("total pages %d, want 5 (110 records in pages of 25)", got)
	}
}

// epCapAPI serves n records by offset or page, at most cap per page whatever
// the request asks, with total and total_pages computed for the cap.
func epCapAPI(t *testing.T, n, cap int) *apiServer {
	return newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
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
		writeJSON(w, 200, fmt.Sprintf(`{"data":%s,"total":%d,"total_pages":%d}`, epRecs(from+1, k), n, (n+cap-1)/cap))
	})
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
				srv := epCapAPI(t, 260, 25)
				spec := fmt.Sprintf("name: ep\nsource:\n  url: %s\n  records: data\n  concurrency: %d\npagination:\n%s"+
					"retry:\n  attempts: 2\n  min_wait: 1ms\n  max_wait: 2ms\ntarget:\n  url: sqlite:out.db\n  table: t\n  key: [id]\n"+
					"  columns:\n    id: {path: id, type: integer}\n", srv.URL, workers, tt.pag)
				job, err := Load([]byte(spec), filepath.Join(t.TempDir(), "job.yaml"), env(nil))
				if err != nil {
					t.Fatal(err)
				}
				var logs bytes.Buffer
				log := slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil))
				e := &Engine{Job: job, Source: NewFetcher(job, log), Logger: log}
				start := (&pager{job: job, src: e.Source, log: log}).start("")
				next := 1
				ends := 0
				for fp := range e.pipeline(context.Background(), start, "", nil, 0) {
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
				t.Logf("%d requests", len(srv.requests()))
			})
		}
	}
}
