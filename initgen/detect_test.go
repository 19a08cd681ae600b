package initgen

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/tidwall/gjson"
)

// Pagination signals of well-known API shapes are found, and every path
// written selects what it names in the body it came from.
func TestDetectPaginationShapes(t *testing.T) {
	literals := map[string]string{ // settings written as values, not paths
		"jira.size": "50", "slack.size": "2", "slack.size_param": "limit",
	}
	tests := []struct {
		name, url, body string
		header          http.Header
		style, key, val string // the pagination key expected, and what its path selects
	}{
		{"graph", "https://graph.example.com/v1.0/users", `{"value":[{"id":"a"}],"@odata.nextLink":"https://graph.example.com/v1.0/users?$skiptoken=X"}`,
			nil, "cursor", "next_url", "https://graph.example.com/v1.0/users?$skiptoken=X"},
		{"hal", "https://api.example.com/orders", `{"_embedded":{"orders":[{"id":1},{"id":2}]},"_links":{"next":{"href":"/orders?page=2"}}}`,
			nil, "cursor", "next_url", "/orders?page=2"},
		{"slack", "https://slack.example.com/api/users.list?limit=2", `{"ok":true,"members":[{"id":"U1"},{"id":"U2"}],"response_metadata":{"next_cursor":"dXNlcjpVMDYxTkZUVDI="}}`,
			nil, "cursor", "next", "dXNlcjpVMDYxTkZUVDI="},
		{"google", "https://www.example.com/v1/items", `{"items":[{"id":"1"}],"nextPageToken":"CAEQAA"}`,
			nil, "cursor", "next", "CAEQAA"},
		{"laravel", "https://api.example.com/posts", `{"current_page":1,"data":[{"id":1}],"last_page":4,"per_page":15,"total":60}`,
			nil, "page", "total_pages", "4"},
		{"jira", "https://jira.example.com/rest/api/2/search", `{"startAt":0,"maxResults":50,"total":120,"issues":[{"id":"1"},{"id":"2"}]}`,
			nil, "offset", "total", "120"},
		{"link", "https://api.example.com/repos?per_page=2", `[{"id":1},{"id":2}]`,
			http.Header{"Link": {`<https://api.example.com/repos?per_page=2&page=2>; rel="next"`}}, "link", "", ""},
		{"last page of a link walk", "https://api.example.com/repos", `[{"id":1}]`,
			http.Header{"Link": {`<https://api.example.com/repos?page=1>; rel="first"`}}, "none", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, _ := url.Parse(tt.url)
			p := &Page{url: u, header: tt.header, body: gjson.Parse(tt.body)}
			if p.header == nil {
				p.header = http.Header{}
			}
			records, arr, ok := findRecords(p.body)
			if !ok {
				t.Fatal("no records found")
			}
			if got := p.body.Get(records); records != "" && got.Raw != arr.Raw {
				t.Errorf("records path %q selects %s", records, got.Raw)
			}
			pg := detectPagination(p, records, arr.Array())
			if pg.style != tt.style {
				t.Fatalf("style %q (%s), want %q", pg.style, pg.why, tt.style)
			}
			for _, s := range pg.settings {
				if want, ok := literals[tt.name+"."+s.key]; ok && (s.open || s.value != want) {
					t.Errorf("%s = %q, want %q", s.key, s.value, want)
				}
			}
			if tt.key == "" {
				return
			}
			for _, s := range pg.settings {
				if s.key == tt.key {
					if got := p.body.Get(s.value).String(); got != tt.val {
						t.Errorf("%s: %s selects %q, want %q", s.key, s.value, got, tt.val)
					}
					return
				}
			}
			t.Errorf("no pagination.%s in %+v", tt.key, pg.settings)
		})
	}
}

func TestColumnName(t *testing.T) {
	used := map[string]bool{}
	for in, want := range map[string]string{"createdAt": "created_at", "Unit Price": "unit_price", "+1": "f_1", "_idemsync_hash": "f_idemsync_hash", "ID": "id"} {
		if got := columnName(in, used); got != want {
			t.Errorf("columnName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := columnName("id", used); got != "id_2" {
		t.Errorf("a second id column is %q, want id_2", got)
	}
}
