package httpsource

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// The request's query is sent as written (docs/pagination.md, "The
// request's query"): a source.url's ?filter=a;b was dropped (Go's query
// parser refuses ';'), ?expand became ?expand=, and an API's next link lost
// a cursor holding ';'. Only the parameters the job sets are added or
// replaced.
func TestQuerySentAsWritten(t *testing.T) {
	srv := newAPIServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, okPage) })
	f, _ := newTestFetcher(t, fetchSpec(srv.URL+"/x?filter=status:open;type:bug&expand&z=1", "  query: {limit: \"50\"}\n", ""), nil)
	first, err := f.BuildURL(f.cfg.Source.URL, url.Values{"page": {"2"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.URL + "/x?filter=status:open;type:bug&expand&z=1&limit=50&page=2"; first != want {
		t.Errorf("first page's URL %s, want %s", first, want)
	}
	next, err := f.BuildURL(srv.URL+"/x?cursor=c;1&z=1", url.Values{"page": {"3"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.URL + "/x?cursor=c;1&z=1&limit=50&page=3"; next != want {
		t.Errorf("next page's URL %s, want %s", next, want)
	}
	for _, u := range []string{first, next} {
		if _, err := f.Fetch(context.Background(), contract.Request{URL: u}); err != nil {
			t.Fatal(err)
		}
	}
	h := srv.requests()
	if len(h) != 2 || h[0].url != "/x?filter=status:open;type:bug&expand&z=1&limit=50&page=2" || h[1].url != "/x?cursor=c;1&z=1&limit=50&page=3" {
		t.Errorf("the API was asked %+v", h)
	}
}
