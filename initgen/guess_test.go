package initgen

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"gopkg.in/yaml.v3"

	"github.com/idemsync/idemsync/jobfile"
)

// buildFrom builds init's file for one page.
func buildFrom(t *testing.T, rawURL, body string, header http.Header) (string, map[string]any) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	if header == nil {
		header = http.Header{}
	}
	spec, sum, err := Build(&Page{url: u, header: header, body: gjson.Parse(body)}, "things")
	if err != nil {
		t.Fatal(err)
	}
	return spec, sum
}

var anyVar = func(string) (string, bool) { return "x", true }

// A parameter name or page size init did not read from the page (the
// URL's own query, a URL of the body or a Link header that shows the
// parameter carrying the value) is a decision the file leaves open:
// validate refuses it, naming the field it saw. Each of these wrote a
// convention's name that validated (issue 27).
func TestInitGuessesAreDecisions(t *testing.T) {
	tests := []struct {
		name, url, body string
		header          http.Header
		words           []string // words of the decision left open
	}{
		{"next_cursor read back as cursor (Slack's name; Notion's is start_cursor)", "https://x/api/users.list?limit=2",
			`{"members":[{"id":"U1"},{"id":"U2"}],"response_metadata":{"next_cursor":"dXNlcjpVMDYx"}}`, nil,
			[]string{"pagination.param", "response_metadata.next_cursor", "cursor"}},
		{"nextPageToken read back as pageToken", "https://x/v1/items",
			`{"items":[{"id":"1"}],"nextPageToken":"CAEQAA"}`, nil, []string{"pagination.param", "nextPageToken", "pageToken"}},
		{"a token sent back under its own name (Airtable's offset)", "https://x/v0/app/tbl?pageSize=2",
			`{"records":[{"id":"rec1"},{"id":"rec2"}],"offset":"itrBVqqzuX9MrR3LY/rec"}`, nil, []string{"pagination.param", "offset"}},
		{"Stripe's starting_after for has_more with ids", "https://x/v1/customers?limit=2",
			`{"object":"list","data":[{"id":"cus_1"},{"id":"cus_2"}],"has_more":true}`, nil, []string{"pagination.param", "starting_after", "has_more"}},
		{"the body's page-number name as the query parameter", "https://x/posts",
			`{"current_page":1,"data":[{"id":1}],"last_page":4,"total":60}`, nil, []string{"pagination.param", "current_page"}},
		{"page when the body says page but the URL does not", "https://x/orders",
			`{"data":[{"id":1},{"id":2}],"meta":{"page":1,"total_pages":3}}`, nil, []string{"pagination.param", "meta.page"}},
		{"cursor for a next-cursor header", "https://x/orders",
			`[{"id":1},{"id":2}]`, http.Header{"X-Next-Cursor": {"abc"}}, []string{"pagination.param", "X-Next-Cursor"}},
		{"the body's offset name as the query parameter", "https://x/feed",
			`{"feed":[{"id":41},{"id":42}],"offset":0,"total_count":200}`, nil, []string{"pagination.param", "offset", "pagination.size_param"}},
		{"the body's limit name as the size parameter of an offset walk", "https://x/feed?offset=0",
			`{"feed":[{"id":41},{"id":42}],"offset":0,"limit":2,"total_count":200}`, nil, []string{"pagination.size_param", "limit"}},
		{"limit and the first page's count as an offset walk's size", "https://x/feed?offset=0",
			`{"feed":[{"id":41},{"id":42}],"total_count":200}`, nil, []string{"pagination.size_param"}},
		{"limit and the first page's count as an hwm walk's size", "https://x/events?since=2024-01-01T00:00:00Z",
			`[{"id":1,"updated_at":"2024-01-02T00:00:00Z"},{"id":2,"updated_at":"2024-01-03T00:00:00Z"}]`, nil, []string{"pagination.size_param"}},
		{"a key only unique on the first page", "https://x/people",
			`[{"name":"a","city":"x"},{"name":"b","city":"x"}]`, nil, []string{"target.key", "name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, sum := buildFrom(t, tt.url, tt.body, tt.header)
			_, err := jobfile.Load([]byte(spec), "/jobs/things.yaml", anyVar)
			if err == nil || !strings.Contains(err.Error(), "decide") {
				t.Fatalf("the file validates; it must leave the guess to decide:\n%s", spec)
			}
			decided := strings.Join(sum["decide"].([]string), "\n")
			for _, w := range tt.words {
				if !strings.Contains(decided, w) {
					t.Errorf("the decisions left open do not name %q:\n%s", w, decided)
				}
			}
		})
	}
}

// What the page shows is no guess: a parameter in the URL's own query, or
// a URL of the body or a Link header whose query carries the value the
// page gives (HubSpot's paging.next.link), is written and validates. A
// page size the body reports but the URL does not send is not written
// for a page walk: the API's own size applies.
func TestInitWritesWhatThePageShows(t *testing.T) {
	tests := []struct {
		name, url, body string
		pag             map[string]string // "" value: the key must not be set
	}{
		{"cursor asked for in the URL", "https://x/api/users.list?limit=2&cursor=",
			`{"members":[{"id":"U1"},{"id":"U2"}],"response_metadata":{"next_cursor":"dXNlcjpVMDYx"}}`,
			map[string]string{"param": "cursor", "next": "response_metadata.next_cursor"}},
		{"a link of the body shows the parameter", "https://x/crm/v3/objects/contacts?limit=2",
			`{"results":[{"id":"1"},{"id":"2"}],"paging":{"next":{"after":"NTI1Cg%3D%3D","link":"?after=NTI1Cg%253D%253D"}}}`,
			map[string]string{"param": "after", "next": "paging.next.after"}},
		{"page asked for in the URL, size only in the body", "https://x/data?page=1",
			`{"page":1,"per_page":2,"total_pages":5,"data":[{"id":1},{"id":2}]}`,
			map[string]string{"param": "page", "total_pages": "total_pages", "size_param": ""}},
		{"Stripe's starting_after in the URL", "https://x/v1/customers?limit=2&starting_after=",
			`{"object":"list","data":[{"id":"cus_1"},{"id":"cus_2"}],"has_more":true}`,
			map[string]string{"param": "starting_after", "size_param": "limit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, sum := buildFrom(t, tt.url, tt.body, nil)
			if _, err := jobfile.Load([]byte(spec), "/jobs/things.yaml", anyVar); err != nil {
				t.Fatalf("%v\n%s", err, spec)
			}
			if d := sum["decide"].([]string); len(d) > 0 {
				t.Errorf("decisions left open: %v", d)
			}
			var f struct {
				Pagination map[string]string `yaml:"pagination"`
			}
			if err := yaml.Unmarshal([]byte(spec), &f); err != nil {
				t.Fatal(err)
			}
			for k, want := range tt.pag {
				if got := f.Pagination[k]; got != want {
					t.Errorf("pagination.%s = %q, want %q\n%s", k, got, want, spec)
				}
			}
		})
	}
}

// A description without a server (or with a relative one) gets no
// made-up base URL that validates: the base URL is a decision.
func TestOpenAPIBaseURLIsADecision(t *testing.T) {
	for name, servers := range map[string]string{"no server": "", "relative server": `"servers":[{"url":"/v1"}],`} {
		t.Run(name, func(t *testing.T) {
			doc := `{"openapi":"3.0.3","info":{"title":"T","version":"1"},` + servers + `"paths":{"/things":{"get":{"responses":{"200":{"description":"ok",` +
				`"content":{"application/json":{"schema":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"}}}}}}}}}}}}`
			file := filepath.Join(t.TempDir(), "api.json")
			if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := ReadOpenAPI(context.Background(), file)
			if err != nil {
				t.Fatal(err)
			}
			spec, sum, err := BuildOpenAPI(d, OpenAPIOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := jobfile.LoadResources([]byte(spec), "/jobs/api.yaml", anyVar); err == nil || !strings.Contains(err.Error(), "decide") {
				t.Fatalf("the file validates with a made-up base URL:\n%s", spec)
			}
			if d := strings.Join(sum["decide"].([]string), "\n"); !strings.Contains(d, "base_url") {
				t.Errorf("no decision names base_url: %q", d)
			}
		})
	}
}

// Records with no field to make a column of (every object on the first
// page empty) are refused with init's error, not a panic: there is no key
// to propose and no column to write (FuzzInit found the panic).
func TestInitRefusesRecordsWithoutFields(t *testing.T) {
	for _, body := range []string{`[{}]`, `[{},{}]`, `{"data":[{},{}],"next":null}`, `[{},{},1]`} {
		u, _ := url.Parse("https://x/things")
		_, _, err := Build(&Page{url: u, header: http.Header{}, body: gjson.Parse(body)}, "things")
		if err == nil || !strings.Contains(err.Error(), "no fields") {
			t.Errorf("%s: err = %v, want init's refusal naming records without fields", body, err)
		}
	}
}

// An array of empty objects is not proposed as a child table: it has no
// column to make; the array stays in its json column.
func TestInitSkipsChildArraysWithoutFields(t *testing.T) {
	spec, _ := buildFrom(t, "https://x/things", `[{"id":1,"lines":[{},{}]},{"id":2,"lines":[{}]}]`, nil)
	if _, err := jobfile.Load([]byte(spec), "/jobs/things.yaml", anyVar); err != nil {
		t.Fatalf("%v\n%s", err, spec)
	}
	if strings.Contains(spec, "children:") || !strings.Contains(spec, "lines:") {
		t.Errorf("want lines as a json column and no child table:\n%s", spec)
	}
}

// A value init quotes in a comment (a cursor the page shows, cut to 40
// characters) is written as valid UTF-8 on one line: a byte that is not
// UTF-8, a character cut in half or a line break in it made a file the
// loader refused (FuzzInit found the first).
func TestInitCommentsQuoteValuesSafely(t *testing.T) {
	// Each the next cursor as the body's JSON writes it.
	for _, next := range []string{"\"\xb7\"", `"` + strings.Repeat("é", 30) + `"`, `"a\nsource: {url: x}"`, `"x\u2028y"`} {
		body := `{"items":[{"id":1},{"id":2}],"meta":{"next":` + next + `}}`
		spec, sum := buildFrom(t, "https://x/things", body, nil)
		if !utf8.ValidString(spec) {
			t.Errorf("next %q: the file is not valid UTF-8:\n%s", next, spec)
			continue
		}
		_, err := jobfile.Load([]byte(spec), "/jobs/things.yaml", anyVar)
		if d, _ := sum["decide"].([]string); err == nil || len(d) == 0 || !strings.Contains(err.Error(), "decide: left open by idemsync init") {
			t.Errorf("next %q: want the file refused only for its decisions, got %v\n%s", next, err, spec)
		}
	}
}
