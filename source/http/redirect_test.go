package httpsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// A same-origin redirect of a POST that turns it into a GET (301, 302,
// 303) drops its body, where a GraphQL query and a body position are: the
// GET's answer is not the page asked for. It is refused (permanent, one
// request, naming the redirect and the methods); a 307 or 308 sends the
// body again, byte for byte, and its answer is the page.
func TestRedirectOfPOSTKeepsItsBody(t *testing.T) {
	const body = `{"query":"{ items(after: $after) { id } }","variables":{"after":"c3"}}`
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var got []string
			srv := newAPIServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got = append(got, r.Method+" "+r.URL.Path+" "+string(b))
				if r.URL.Path == "/graphql" {
					http.Redirect(w, r, "/v2/graphql", status)
					return
				}
				if r.Method == http.MethodGet {
					writeJSON(w, 200, `{"data":[{"id":1},{"id":2}]}`) // the first page, as a GET gets it
					return
				}
				writeJSON(w, 200, `{"data":[{"id":7},{"id":8}]}`)
			})
			f, _ := newTestFetcher(t, fetchSpec(srv.URL+"/graphql", "  method: POST\n  body: '"+body+"'\n", ""), nil)
			resp, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL + "/graphql"})
			if status == 307 || status == 308 {
				if err != nil || len(resp.Records) != 2 || resp.Records[0].Get("id").Int() != 7 {
					t.Fatalf("%d: %v, %+v; want the page of the POST", status, err, resp)
				}
				if len(got) != 2 || got[1] != "POST /v2/graphql "+body {
					t.Errorf("requests %q, want the body sent again as is", got)
				}
				return
			}
			var e *contract.Error
			if !errors.As(err, &e) || e.Class != contract.Permanent ||
				!strings.Contains(e.Msg, fmt.Sprintf("redirect (HTTP %d)", status)) || !strings.Contains(e.Msg, "POST into a GET") {
				t.Fatalf("%d: %v (%+v); want a permanent refusal naming the redirect", status, err, resp)
			}
			if len(got) != 1 {
				t.Errorf("requests %q, want only the POST", got)
			}
		})
	}
}
