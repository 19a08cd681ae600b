package httpsource

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	idsync "github.com/idemsync/idemsync/sync"
)

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
		code     contract.Class // None: success
		records  int
		requests int
		says     string
	}{
		{"204", func(w http.ResponseWriter) { w.WriteHeader(204) }, 0, 0, 1, ""},
		{"html login page", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte("<!DOCTYPE html><html><body>Sign in</body></html>"))
		}, contract.Permanent, 0, 1, "HTTP 200 body is not JSON (Content-Type text/html): <!DOCTYPE html>"},
		{"plain text", func(w http.ResponseWriter) { _, _ = w.Write([]byte("Unauthorized")) }, contract.Permanent, 0, 1, "not JSON"},
		{"HTML served as JSON", func(w http.ResponseWriter) { writeJSON(w, 200, "<html>oops</html>") }, contract.Permanent, 0, 1, "not JSON"},
		{"truncated JSON", func(w http.ResponseWriter) { writeJSON(w, 200, `{"data":[{"id":1},`) }, contract.Transient, 0, 3, "invalid JSON body"},
		{"truncated JSON labelled HTML", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`{"data":[{"id":1},`))
		}, contract.Permanent, 0, 1, "not JSON"},
		{"JSON labelled HTML", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(okPage))
		}, 0, 2, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) { tt.respond(w) })
			f, _ := newTestFetcher(t, fetchSpec(srv.URL, "", ""), nil)
			resp, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL})
			if n := len(srv.requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			if tt.code == 0 {
				if err != nil || len(resp.Records) != tt.records || resp.Raw != tt.records {
					t.Fatalf("%v; want %d records", err, tt.records)
				}
				return
			}
			if err == nil || contract.ClassOf(err) != tt.code || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %v (%v), want %v saying %q", err, contract.ClassOf(err), tt.code, tt.says)
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

// Raw counts the array the API returned, before a GJSON filter, modifier
// or flatten in source.records: the short-page rule must see a page of 25
// as full even when the path keeps fewer records.
func TestFetchRawCountsTheReturnedArray(t *testing.T) {
	var active strings.Builder
	for i := range 25 {
		if i > 0 {
			active.WriteByte(',')
		}
		fmt.Fprintf(&active, `{"id":%d,"active":%v}`, i, i%3 == 0)
	}
	for _, tt := range []struct {
		records, body string
		recs, raw     int
	}{
		{"data", `{"data":[` + active.String() + `]}`, 25, 25},
		{"data.#(active==true)#", `{"data":[` + active.String() + `]}`, 9, 25},
		{"#.c|@flatten", `[` + strings.Repeat(`{"c":[]},`, 24) + `{"c":[{"id":1}]}]`, 1, 25},
		{"data.items|@reverse", `{"data":{"items":[{"id":1},{"id":2}]}}`, 2, 2},
	} {
		t.Run(tt.records, func(t *testing.T) {
			srv := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, tt.body) })
			yml := strings.Replace(fetchSpec(srv.URL, "", ""), "records: data", fmt.Sprintf("records: %q", tt.records), 1)
			f, _ := newTestFetcher(t, yml, nil)
			resp, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Records) != tt.recs || resp.Raw != tt.raw {
				t.Errorf("%d records, raw %d; want %d and %d", len(resp.Records), resp.Raw, tt.recs, tt.raw)
			}
		})
	}
}

// A body larger than source.max_body is a permanent error naming the limit,
// read no further than the limit and not retried.
func TestFetchBodyLimit(t *testing.T) {
	const limit = 1024
	body := `{"data":[{"id":1,"pad":"` + strings.Repeat("x", limit) + `"}]}`
	srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, body) })
	f, _ := newTestFetcher(t, fetchSpec(srv.URL, "  max_body: 1KiB\n", ""), nil)
	e := fetchErr(t, f, srv.URL)
	if e.Class != contract.Permanent || !strings.Contains(e.Error(), "GET "+srv.URL+": response body larger than source.max_body (1024 bytes)") {
		t.Errorf("over max_body: %v (%v)", e, e.Class)
	}
	if !strings.Contains(e.Hint, "max_body") {
		t.Errorf("over max_body: hint %q does not name source.max_body", e.Hint)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	exact := `{"data":[{"id":1,"pad":"` + strings.Repeat("x", limit-len(`{"data":[{"id":1,"pad":""}]}`)) + `"}]}`
	srv = newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, exact) })
	f, _ = newTestFetcher(t, fetchSpec(srv.URL, "  max_body: 1KiB\n", ""), nil)
	if _, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL}); err != nil {
		t.Errorf("a body of exactly max_body (%d bytes): %v", len(exact), err)
	}
}

// nested returns a page whose one record holds n nested arrays.
func nested(n int) string {
	return `{"data":[{"id":1,"deep":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}]}`
}

// Deeply nested JSON is refused with a clear permanent error; it must not
// overflow the stack (10 million levels did, in gjson, before the check).
func TestFetchDeeplyNestedJSON(t *testing.T) {
	for _, n := range []int{100_000, 10_000_000} {
		body := nested(n)
		srv := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, body) })
		// A 20 MB body can take longer than the tests' 2 s timeout to
		// arrive on a loaded machine, and would be retried as cut short.
		f, _ := newTestFetcher(t, fetchSpec(srv.URL, "  timeout: 60s\n", ""), nil)
		e := fetchErr(t, f, srv.URL)
		if e.Class != contract.Permanent || !strings.Contains(e.Error(), "nested deeper than 10000 levels") {
			t.Errorf("%d levels: %v (%v)", n, e, e.Class)
		}
		if got := len(srv.requests()); got != 1 {
			t.Errorf("%d levels: %d requests, want 1", n, got)
		}
		// The same body as an error response is described, not parsed.
		srv.setHandle(func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 500, body) })
		if e := fetchErr(t, f, srv.URL); e.Class != contract.Transient || !strings.Contains(e.Error(), "HTTP 500") {
			t.Errorf("%d levels in a 500: %v (%v)", n, e, e.Class)
		}
	}
	body := nested(MaxJSONDepth - 3)
	srv := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, body) })
	f, _ := newTestFetcher(t, fetchSpec(srv.URL, "", ""), nil)
	if resp, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL}); err != nil || len(resp.Records) != 1 {
		t.Errorf("%d levels (within the limit): %v", MaxJSONDepth-3, err)
	}
}

func TestJSONDepthExceeds(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  bool
	}{
		{`[[[]]]`, 3, false},
		{`[[[[]]]]`, 3, true},
		{`{"a":{"b":{"c":1}}}`, 3, false},
		{`{"a":{"b":{"c":{}}}}`, 3, true},
		{`["[[[[[[", "{{{{"]`, 1, false},
		{`["\"[[[[", {}]`, 1, true},
		{`["\\", [[]]]`, 2, true},
		{`"[[[["`, 0, false},
	}
	for _, tt := range tests {
		if got := jsonDepthExceeds([]byte(tt.in), tt.limit); got != tt.want {
			t.Errorf("jsonDepthExceeds(%s, %d) = %v, want %v", tt.in, tt.limit, got, tt.want)
		}
	}
}

// The records path must lead to an array; anything else is a permanent
// error naming the path and what it found.
func TestFetchRecordsPath(t *testing.T) {
	tests := []struct {
		records, body string
		n             int
		err           string
	}{
		{"data", `{"data":[{"id":1},{"id":2}]}`, 2, ""},
		{"data", `{"data":null}`, 0, ""},
		{"data", `{"data":[]}`, 0, ""},
		{"data.items", `{"data":{"items":[{"id":1}]}}`, 1, ""},
		{"data", `{"data":{"id":1}}`, 0, "records path data is an object, not an array of records"},
		{"data", `{"data":"x"}`, 0, "records path data is a string, not an array of records"},
		{"data", `{"data":3}`, 0, "records path data is a number"},
		{"data", `{"items":[],"meta":{}}`, 0, "records path data not found in the response (top-level keys: items, meta)"},
		{"data.orders", `{"errors":[{"message":"Cannot query field \"name\" on type \"Order\"."}]}`, 0, `records path data.orders not found in the response (top-level keys: errors); error payload at errors: [{"message":"Cannot query field \"name\"`},
		{"data", `{"error":"","fault":{"code":"E1"}}`, 0, `(top-level keys: error, fault); error payload at fault: {"code":"E1"}`},
		{"", `{"id":1}`, 0, "the response body is an object, not an array of records"},
		{"", `[{"id":1}]`, 1, ""},
	}
	for _, tt := range tests {
		srv := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, tt.body) })
		yml := fetchSpec(srv.URL, "", "")
		if tt.records == "" {
			yml = strings.Replace(yml, "  records: data\n", "", 1)
		} else {
			yml = strings.Replace(yml, "records: data", "records: "+tt.records, 1)
		}
		f, _ := newTestFetcher(t, yml, nil)
		resp, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL})
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("records %q in %s: %v", tt.records, tt.body, err)
		case tt.err == "" && len(resp.Records) != tt.n:
			t.Errorf("records %q in %s: %d records, want %d", tt.records, tt.body, len(resp.Records), tt.n)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || contract.ClassOf(err) != contract.Permanent):
			t.Errorf("records %q in %s: %v (%v), want exit 1 saying %q", tt.records, tt.body, err, contract.ClassOf(err), tt.err)
		case tt.err != "" && len(srv.requests()) != 1:
			t.Errorf("records %q in %s: %d requests, want 1", tt.records, tt.body, len(srv.requests()))
		}
	}
}

// A records path never reads records out of a JSON string's text: gjson
// descends into a top-level string (`"[[1]]"` at 0 is `[1]`) and, after a
// pipe, into a string value; both are refused, naming the path.
func TestRecordsNotFromStringText(t *testing.T) {
	for _, tt := range []struct{ body, path string }{
		{`"[[1]]"`, "0"},
		{`"[["`, "0"},
		{`{"x":"[[\"a\"]]"}`, "x|0"},
	} {
		job := &idsync.Job{Spec: spec.Spec{Source: spec.Source{Records: tt.path}}, Secrets: idsync.NewRedactor()}
		recs, err := (&Fetcher{cfg: ConfigOf(job)}).records([]byte(tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("%s at %s: records %v, err %v; want an error naming the path", tt.body, tt.path, recs, err)
		}
	}
	job := &idsync.Job{Spec: spec.Spec{Source: spec.Source{Records: "data|@reverse"}}, Secrets: idsync.NewRedactor()}
	if recs, err := (&Fetcher{cfg: ConfigOf(job)}).records([]byte(`{"data":[{"id":1},{"id":2}]}`)); err != nil || len(recs) != 2 {
		t.Errorf("a modifier on an array: %v %v", recs, err)
	}
}
