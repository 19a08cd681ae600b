package pagesignal

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// More finds the sign of more wherever the page puts it, and none on a
// page that shows the list is whole.
func TestMore(t *testing.T) {
	tests := []struct {
		name, query, body string
		want              string // the first sign, "" for none
	}{
		{"dlt next_id", "limit=10", `{"entries":[{"id":1}],"next_id":11,"limit":10}`, "next_id holds 11"},
		{"nested cursor", "", `{"data":[{"id":1}],"paging":{"cursors":{"after":"QVFI"},"next_page":"abc"}}`, "paging.next_page holds \"abc\""},
		{"relative next beside done", "", `{"records":[{"Id":"1"}],"done":false,"nextRecordsUrl":"/services/data/v59.0/query/01g-2000"}`, `nextRecordsUrl holds "/services/data/v59.0/query/01g-2000"`},
		{"has_more under meta", "", `{"items":[{"id":1}],"meta":{"has_more":true}}`, "meta.has_more is true"},
		{"done false", "", `{"items":[{"id":1}],"done":false}`, "done is false"},
		{"total above the page", "", `{"items":[{"id":1}],"pagination_details":{"total_posts":3,"total":3}}`, "pagination_details.total says 3 records (1 on the page)"},
		{"page count", "", `{"items":[{"id":1}],"page_info":{"total_pages":5}}`, "page_info.total_pages says 5 pages"},
		{"full page", "page%5Bsize%5D=2", `[{"id":1},{"id":2}]`, "page[size] asked for 2 records and the page holds 2"},
		{"$top", "%24top=1", `{"value":[{"id":1}]}`, "$top asked for 1 records and the page holds 1"},
		{"HAL next", "", `{"_embedded":{"x":[{"id":1}]},"_links":{"next":{"href":"/x?page=2"}}}`, `_links.next holds "/x?page=2"`},
		// No sign: the last page of each kind, and Google's sync token.
		{"null next", "", `{"results":[{"id":1}],"next":null,"previous":"https://x/?page=1"}`, ""},
		{"has_more false", "limit=10", `{"data":[{"id":1}],"has_more":false}`, ""},
		{"total equals page", "", `{"data":[{"id":1},{"id":2}],"total":2}`, ""},
		{"sync token", "", `{"items":[{"id":1}],"nextSyncToken":"CPDAlvWDx70CEPDAlvWDx70CGAU="}`, ""},
		{"short page", "per_page=3", `[{"id":1},{"id":2}]`, ""},
		{"next inside a record's object", "", `{"data":[{"id":1}],"plan":{"next_billing":"2025-01-01"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			body := gjson.Parse(tt.body)
			n := len(body.Array())
			if !body.IsArray() {
				body.ForEach(func(_, v gjson.Result) bool {
					if v.IsArray() {
						n = len(v.Array())
					}
					return true
				})
				if e := body.Get("_embedded.x"); e.Exists() {
					n = len(e.Array())
				}
			}
			signs := More(body, q, n)
			got := ""
			if len(signs) > 0 {
				got = signs[0].String()
			}
			if got != tt.want {
				t.Errorf("first sign %q, want %q (all: %v)", got, tt.want, signs)
			}
			for _, s := range signs {
				if s.Kind != KindFullPage && !body.Get(s.Where).Exists() {
					t.Errorf("sign %v: its path selects nothing", s)
				}
				if s.Kind == KindFullPage && !strings.Contains(tt.query, url.QueryEscape(s.Where)) {
					t.Errorf("sign %v: not a parameter of %q", s, tt.query)
				}
			}
		})
	}
}
