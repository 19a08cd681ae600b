package initgen

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/sync/paging"
)

// corpusCase is one first page init may meet: the shapes of dlt's
// paginator-detection tests and the documented list envelopes of
// well-known APIs (issue 27).
type corpusCase struct {
	name, url, body string
	link            string // a Link header, when the API sends one
	style           string
	want            map[string]string // pagination keys: a path where the value is one, else the value
	decide          string            // a word of the decision left open; "" when none is
}

var corpus = []corpusCase{
	// dlt: tests/sources/helpers/rest_client/test_detector.py
	{"dlt offset under pagination", "https://x/data", `{"data":[{"id":1},{"id":2}],"pagination":{"offset":0,"limit":2,"total":100}}`, "",
		"offset", map[string]string{"size": "2", "total": "pagination.total"}, "pagination.offset"},
	{"dlt page_info", "https://x/items", `{"items":[{"id":11},{"id":12}],"page_info":{"current_page":1,"items_per_page":2,"total_pages":50}}`, "",
		"page", map[string]string{"total_pages": "page_info.total_pages"}, "page_info.current_page"},
	{"dlt next_cursor", "https://x/products", `{"products":[{"id":101},{"id":102}],"next_cursor":"eyJpZCI6MTAyfQ=="}`, "",
		"cursor", map[string]string{"next": "next_cursor"}, "next_cursor"},
	{"dlt cursors.next", "https://x/results", `{"results":[{"id":201},{"id":202}],"cursors":{"next":"NjM=","previous":"MTk="}}`, "",
		"cursor", map[string]string{"next": "cursors.next"}, "cursors.next"},
	{"dlt next_id with limit", "https://x/entries?limit=10", `{"entries":[{"id":1},{"id":2},{"id":3},{"id":4},{"id":5},{"id":6},{"id":7},{"id":8},{"id":9},{"id":10}],"next_id":11,"limit":10}`, "",
		"cursor", map[string]string{"next": "next_id", "size_param": "limit", "size": "10"}, "next_id"},
	{"dlt page_number", "https://x/comments", `{"comments":[{"id":51},{"id":52}],"page_number":3,"total_pages":15}`, "",
		"page", map[string]string{"total_pages": "total_pages"}, "page_number"},
	{"dlt next URL (DRF)", "https://x/accounts", `{"count":1023,"next":"https://api.example.org/accounts/?page=5","previous":"https://api.example.org/accounts/?page=3","results":[{"id":1},{"id":2}]}`, "",
		"cursor", map[string]string{"next_url": "next"}, ""},
	{"dlt HAL", "https://x/items", `{"_embedded":{"items":[{"id":1},{"id":2}]},"_links":{"first":{"href":"http://api.example.com/items?page=0&size=2"},"self":{"href":"http://api.example.com/items?page=1&size=2"},"next":{"href":"http://api.example.com/items?page=2&size=2"}},"page":{"size":2,"totalElements":100,"totalPages":50,"number":1}}`, "",
		"cursor", map[string]string{"next_url": "_links.next.href"}, ""},
	{"dlt links.nextPage", "https://x/items", `{"items":[{"id":1},{"id":2}],"meta":{"currentPage":1,"pageSize":2,"totalPages":50,"totalItems":100},"links":{"firstPage":"/items?page=1&limit=2","previousPage":"/items?page=0&limit=2","nextPage":"/items?page=2&limit=2","lastPage":"/items?page=50&limit=2"}}`, "",
		"cursor", map[string]string{"next_url": "links.nextPage"}, ""},
	{"dlt pagination.totalPages", "https://x/data", `{"data":[{"id":1},{"id":2}],"pagination":{"currentPage":1,"pageSize":2,"totalPages":5,"totalItems":10}}`, "",
		"page", map[string]string{"total_pages": "pagination.totalPages"}, "pagination.currentPage"},
	{"dlt pagination.page", "https://x/items", `{"items":[{"id":1},{"id":2}],"pagination":{"page":1,"perPage":2,"total":10,"totalPages":5}}`, "",
		"page", map[string]string{"total_pages": "pagination.totalPages"}, "pagination.page"},
	{"dlt links.next relative", "https://x/api/items", `{"data":[{"id":1},{"id":2}],"meta":{"currentPage":1,"itemsPerPage":2,"totalItems":10,"totalPages":5},"links":{"first":"/api/items?page=1","previous":null,"next":"/api/items?page=2","last":"/api/items?page=5"}}`, "",
		"cursor", map[string]string{"next_url": "links.next"}, ""},
	{"dlt page and pages", "https://x/data", `{"page":2,"per_page":10,"total":100,"pages":10,"data":[{"id":1},{"id":2}]}`, "",
		"page", map[string]string{"total_pages": "pages"}, "at page,"},
	{"dlt currentPage", "https://x/items", `{"currentPage":1,"pageSize":10,"totalPages":5,"totalRecords":50,"items":[{"id":1},{"id":2}]}`, "",
		"page", map[string]string{"total_pages": "totalPages"}, "currentPage"},
	{"dlt paging current (dlt finds nothing)", "https://x/articles", `{"articles":[{"id":21},{"id":22}],"paging":{"current":3,"size":2,"total":60}}`, "",
		"none", nil, "paging.total"},
	{"dlt offset beside the feed", "https://x/feed", `{"feed":[{"id":41},{"id":42}],"offset":40,"limit":2,"total_count":200}`, "",
		"offset", map[string]string{"size": "2", "total": "total_count"}, "at offset,"},
	{"dlt page_details.number", "https://x/q", `{"query_results":[{"id":81},{"id":82}],"page_details":{"number":1,"size":2,"total_elements":50,"total_pages":25}}`, "",
		"none", nil, "page_details.total_pages"},
	{"dlt pagination_details", "https://x/posts", `{"posts":[{"id":91},{"id":92}],"pagination_details":{"current_page":4,"posts_per_page":2,"total_posts":100,"total_pages":50}}`, "",
		"page", map[string]string{"total_pages": "pagination_details.total_pages"}, "pagination_details.current_page"},
	{"dlt page_metadata.index", "https://x/catalog", `{"catalog":[{"id":101},{"id":102}],"page_metadata":{"index":1,"size":2,"total_items":20,"total_pages":10}}`, "",
		"none", nil, "page_metadata.total_items"},
	{"dlt bare array", "https://x/products", `[{"id":101},{"id":102}]`, "", "none", nil, ""},
	{"dlt bare array with Link", "https://x/products", `[{"id":101},{"id":102}]`, `<https://x/products?page=2>; rel="next"`, "link", nil, ""},

	// Documented envelopes of well-known APIs.
	{"Airtable offset token", "https://api.airtable.com/v0/app/tbl?pageSize=2", `{"records":[{"id":"rec1"},{"id":"rec2"}],"offset":"itrBVqqzuX9MrR3LY/recHVOk4qSjyBkSuI"}`, "",
		"cursor", map[string]string{"next": "offset", "size_param": "pageSize", "size": "2"}, "takes offset"},
	{"Salesforce done:false and a relative next URL", "https://x/services/data/v59.0/query?q=SELECT", `{"totalSize":4000,"done":false,"nextRecordsUrl":"/services/data/v59.0/query/01gD0000002HU6KIAW-2000","records":[{"Id":"a"},{"Id":"b"}]}`, "",
		"cursor", map[string]string{"next_url": "nextRecordsUrl"}, ""},
	{"Kubernetes metadata.continue", "https://k8s/api/v1/pods?limit=2", `{"kind":"PodList","metadata":{"resourceVersion":"10245","continue":"ENCODED_CONTINUE_TOKEN"},"items":[{"metadata":{"uid":"a"}},{"metadata":{"uid":"b"}}]}`, "",
		"cursor", map[string]string{"next": "metadata.continue", "size_param": "limit"}, "metadata.continue"},
	{"Facebook Graph paging", "https://graph.facebook.com/v19.0/me/posts", `{"data":[{"id":"1"},{"id":"2"}],"paging":{"cursors":{"before":"QVFIUjRt","after":"QVFIUmlt"},"next":"https://graph.facebook.com/v19.0/me/posts?after=QVFIUmlt"}}`, "",
		"cursor", map[string]string{"next_url": "paging.next"}, ""},
	{"HubSpot paging.next.after", "https://api.hubapi.com/crm/v3/objects/contacts?limit=2", `{"results":[{"id":"1"},{"id":"2"}],"paging":{"next":{"after":"NTI1Cg%3D%3D","link":"?after=NTI1Cg%3D%3D"}}}`, "",
		"cursor", map[string]string{"param": "after", "next": "paging.next.after"}, ""},
	{"Intercom pages.next.starting_after", "https://api.intercom.io/contacts?per_page=2", `{"type":"list","data":[{"id":"1"},{"id":"2"}],"pages":{"type":"pages","next":{"page":2,"starting_after":"WzE2ODE2"},"page":1,"per_page":2,"total_pages":5}}`, "",
		"cursor", map[string]string{"next": "pages.next.starting_after"}, "pages.next.starting_after"},
	{"Twitter meta.next_token", "https://api.twitter.com/2/users/1/tweets?max_results=5", `{"data":[{"id":"1"},{"id":"2"}],"meta":{"result_count":2,"next_token":"7140dibdnow9c7btw3w29grvxfcgvpb9n9coehpk7xz5i"}}`, "",
		"cursor", map[string]string{"next": "meta.next_token"}, "meta.next_token"},
	{"Elasticsearch scroll id", "https://es/_search?scroll=1m", `{"_scroll_id":"DXF1ZXJ5QW5kRmV0Y2gBAAAAAAAAAD4WYm9laVYtZndUQlNsdDcwakFMNjU1QQ==","hits":{"total":{"value":100},"hits":[{"_id":"1"},{"_id":"2"}]}}`, "",
		"cursor", map[string]string{"next": "_scroll_id"}, "_scroll_id"},
	{"Square cursor", "https://connect.squareup.com/v2/customers", `{"customers":[{"id":"A"},{"id":"B"}],"cursor":"CAISHAoWNTc"}`, "",
		"cursor", map[string]string{"next": "cursor"}, "takes cursor"},
	{"Zendesk links.next beside meta.has_more", "https://x.zendesk.com/api/v2/tickets.json?page%5Bsize%5D=2", `{"tickets":[{"id":1},{"id":2}],"meta":{"has_more":true,"after_cursor":"xxx","before_cursor":"yyy"},"links":{"next":"https://x.zendesk.com/api/v2/tickets.json?page%5Bafter%5D=xxx&page%5Bsize%5D=2","prev":null}}`, "",
		"cursor", map[string]string{"next_url": "links.next", "size_param": "page[size]", "size": "2"}, ""},
	{"PokeAPI next URL", "https://pokeapi.co/api/v2/pokemon?limit=2", `{"count":1302,"next":"https://pokeapi.co/api/v2/pokemon?offset=2&limit=2","previous":null,"results":[{"name":"a","url":"u1"},{"name":"b","url":"u2"}]}`, "",
		"cursor", map[string]string{"next_url": "next"}, ""},
	{"Mailchimp total_items with count", "https://us1.api.mailchimp.com/3.0/lists/x/members?count=2", `{"members":[{"id":"a"},{"id":"b"}],"total_items":120}`, "",
		"none", nil, "total_items"},
	{"GitLab full page, position in a header it does not name", "https://gitlab.com/api/v4/projects?per_page=2", `[{"id":1},{"id":2}]`, "",
		"none", nil, "per_page"},
	{"OData $top full", "https://services.odata.org/V4/People?%24top=2", `{"value":[{"UserName":"a"},{"UserName":"b"}]}`, "",
		"none", nil, "$top"},
	{"next_page number", "https://x/v1/items", `{"data":[{"id":1},{"id":2}],"next_page":2}`, "",
		"page", nil, "page number"},
	{"Notion next_cursor beside has_more", "https://api.notion.com/v1/users?page_size=2", `{"object":"list","results":[{"id":"u1"},{"id":"u2"}],"next_cursor":"fe2cc560-036c","has_more":true}`, "",
		"cursor", map[string]string{"next": "next_cursor"}, "next_cursor"},
	{"Kubernetes continue asked for in the URL", "https://k8s/api/v1/pods?limit=2&continue=", `{"kind":"PodList","metadata":{"continue":"ENCODED"},"items":[{"metadata":{"uid":"a"}},{"metadata":{"uid":"b"}}]}`, "",
		"cursor", map[string]string{"param": "continue", "next": "metadata.continue"}, ""},
	{"page asked for in the URL", "https://x/data?page=1", `{"page":1,"per_page":10,"pages":10,"data":[{"id":1},{"id":2}]}`, "",
		"page", map[string]string{"param": "page", "total_pages": "pages"}, ""},
	// Pages that show no sign of more: none, nothing to decide.
	{"whole list with has_more false", "https://x/v1/all?limit=10", `{"data":[{"sku":"a"},{"sku":"b"}],"has_more":false}`, "", "none", nil, ""},
	{"whole list with its total", "https://x/v1/all", `{"data":[{"id":1},{"id":2}],"total":2,"next":null}`, "", "none", nil, ""},
	{"Google sync token on the last page", "https://x/calendar/v3/events", `{"items":[{"id":"1"},{"id":"2"}],"nextSyncToken":"CPDAlvWDx70CEPDAlvWDx70CGAU="}`, "", "none", nil, ""},
}

// Every shape of the corpus gets the style its API documents, or, when
// the page says there is more but not how to ask for it, a decision left
// open naming what it saw; style none with nothing to decide only when
// the page shows no sign of more. Every path written selects a value of
// the body it came from.
func TestDetectCorpus(t *testing.T) {
	rules := map[string]bool{}
	for _, r := range paging.StyleRules() {
		rules[r.Name] = true
	}
	for _, tt := range corpus {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			p := &Page{url: u, header: http.Header{}, body: gjson.Parse(tt.body)}
			if tt.link != "" {
				p.header.Set("Link", tt.link)
			}
			records, arr, ok := findRecords(p.body)
			if !ok {
				t.Fatal("no records found")
			}
			pg := detectPagination(p, records, arr.Array())
			if !rules[pg.style] {
				t.Fatalf("style %q is not one of the engine's style table", pg.style)
			}
			if pg.style != tt.style {
				t.Errorf("style %q (%s), want %q", pg.style, pg.why, tt.style)
			}
			decided := strings.Join(pg.decide, "\n")
			switch {
			case tt.decide == "" && decided != "":
				t.Errorf("decisions left open where none should be:\n%s", decided)
			case tt.decide != "" && !strings.Contains(decided, tt.decide):
				t.Errorf("the decision left open must name %q; got %q (%s)", tt.decide, decided, pg.why)
			}
			got := map[string]string{}
			for _, s := range pg.settings {
				if !s.open {
					got[s.key] = s.value
				}
			}
			for k, want := range tt.want {
				if got[k] != want {
					t.Errorf("pagination.%s = %q, want %q (all: %+v)", k, got[k], want, pg.settings)
				}
			}
			for _, k := range []string{"next", "next_url", "total", "total_pages", "has_more"} {
				if v, ok := got[k]; ok && !strings.Contains(v, "@reverse") && !p.body.Get(v).Exists() {
					t.Errorf("pagination.%s = %q selects nothing in the body", k, v)
				}
			}
		})
	}
}
