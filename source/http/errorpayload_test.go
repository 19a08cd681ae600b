package httpsource

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// How a 2xx error payload is classified (docs/job-file.md, "Error payloads
// in a 2xx body"): GraphQL request errors fail at once (exit 1, one
// request), other payloads are retried (exit 3), and a null or empty
// records value is an error only next to a non-empty error key.
func TestFetchErrorPayloadClasses(t *testing.T) {
	const gql = "  method: POST\n  body: {query: \"{ x }\"}\n" // error_path: errors by default
	tests := []struct {
		name, source, body string
		code               contract.Class // None: a page
		says               string
	}{
		{"validation, no data", gql, `{"errors":[{"message":"Cannot query field \"x\""}]}`, contract.Permanent, "GraphQL request error"},
		{"code with data", gql, `{"errors":[{"message":"bad","extensions":{"code":"BAD_USER_INPUT"}}],"data":null}`, contract.Permanent, "GraphQL BAD_USER_INPUT"},
		{"code under a filter", gql + "  error_path: \"errors.#(path.#<3)#\"\n", `{"errors":[{"message":"parse","extensions":{"code":"GRAPHQL_PARSE_FAILED"}}]}`, contract.Permanent, "GraphQL GRAPHQL_PARSE_FAILED"},
		{"field error with data null", gql, `{"errors":[{"message":"throttled","path":["x"]}],"data":null}`, contract.Transient, "error payload at errors"},
		{"other code", gql, `{"errors":[{"message":"boom","extensions":{"code":"INTERNAL_SERVER_ERROR"}}],"data":{"x":null}}`, contract.Transient, "INTERNAL_SERVER_ERROR"},
		{"throttled, no data", gql, `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}],"extensions":{"cost":{}}}`, contract.Transient, "THROTTLED"},
		{"rate limited by type, no data", gql, `{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded"}]}`, contract.Transient, "RATE_LIMITED"},
		{"throttled, no data, under a filter", gql + "  error_path: \"errors.#(path.#<3)#\"\n", `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]}`, contract.Transient, "THROTTLED"},
		{"validation next to a throttle code", gql, `{"errors":[{"message":"t","extensions":{"code":"RATE_LIMITED"}},{"message":"v","extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`, contract.Permanent, "GraphQL GRAPHQL_VALIDATION_FAILED"},
		{"errors not GraphQL-shaped, no data", gql, `{"errors":["boom"]}`, contract.Transient, "error payload at errors"},
		{"records not under data, no data", gql + "  # records: items\n", `{"items":[{"id":1}],"errors":[{"message":"partial"}]}`, contract.Transient, "error payload at errors"},
		{"filtered out", gql + "  error_path: \"errors.#(path.#<3)#\"\n", `{"errors":[{"message":"n","path":["data",1,"note"]}],"data":[{"id":1}]}`, 0, ""},
		{"error_path off", gql + "  error_path: \"\"\n", `{"errors":[{"message":"n"}],"data":[{"id":1}]}`, 0, ""},
		{"null next to error", "", `{"data":null,"error":{"message":"down"}}`, contract.Transient, "records path data is null next to an error payload at error"},
		{"null next to fault", "", `{"data":null,"fault":"down"}`, contract.Transient, "at fault"},
		{"null next to errors, error_path off", gql + "  error_path: \"\"\n", `{"data":null,"errors":[{"message":"x"}]}`, contract.Transient, "at errors"},
		{"null next to an empty error", "", `{"data":null,"error":{},"errors":[],"message":"no more"}`, 0, ""},
		{"empty next to error", "", `{"data":[],"error":{"message":"down"}}`, contract.Transient, "records path data is empty next to an error payload at error"},
		{"empty next to errors, records by filter", "  records: \"data.#(id>0)#\"\n", `{"data":[],"errors":["down"]}`, contract.Transient, "is empty next to an error payload at errors"},
		{"empty next to an empty error", "", `{"data":[],"error":null,"errors":[],"fault":false}`, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, tt.body) })
			spec := fetchSpec(srv.URL, tt.source, "  attempts: 2\n  min_wait: 1ms\n  max_wait: 2ms\n")
			if strings.Contains(tt.source, "# records: items") {
				spec = strings.Replace(spec, "  records: data\n", "  records: items\n", 1)
			}
			if strings.Contains(tt.source, "  records: ") {
				spec = strings.Replace(spec, "  records: data\n", "", 1)
			}
			f, _ := newTestFetcher(t, spec, nil)
			if tt.code == 0 {
				if _, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL}); err != nil {
					t.Fatalf("%v, want a page", err)
				}
				return
			}
			e := fetchErr(t, f, srv.URL)
			want := map[contract.Class]int{contract.Permanent: 1, contract.Transient: 2}[tt.code]
			if e.Class != tt.code || !strings.Contains(e.Error(), tt.says) || len(srv.requests()) != want {
				t.Errorf("%v (%v, %d requests), want %v after %d naming %q", e, e.Class, len(srv.requests()), tt.code, want, tt.says)
			}
		})
	}
}
