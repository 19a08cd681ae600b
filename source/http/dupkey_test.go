package httpsource

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// A key the run reads, met twice in one object on its path, fails the
// fetch at once (one request, exit 1) naming the key and the setting; a
// key twice elsewhere, or a body without duplicates, is a page as before
// (docs/job-file.md, "source").
func TestDuplicateKeyOnReadPath(t *testing.T) {
	const pag = "pagination:\n  style: page\n  has_more: meta.has_more\n  total: meta.total\n"
	tests := []struct {
		name, body string
		records    int    // on success
		says       string // "": success
	}{
		{"records twice, empty first", `{"data":[],"data":[{"id":1},{"id":2}]}`, 0, `the key "data" twice in the object at the top level (source.records reads it)`},
		{"records twice, full first", `{"data":[{"id":1},{"id":2}],"data":[]}`, 0, `the key "data" twice`},
		{"records twice, one escaped", `{"data":[],"d\u0061ta":[{"id":1}]}`, 0, `the key "data" twice`},
		{"flag twice", `{"data":[{"id":1}],"meta":{"has_more":false,"total":9,"has_more":true}}`, 0, `the key "has_more" twice in the object at meta (pagination.has_more reads it)`},
		{"holder twice", `{"meta":{"has_more":false},"data":[{"id":1}],"meta":{"has_more":true}}`, 0, `the key "meta" twice`},
		{"error_path twice", `{"data":[{"id":1}],"error":null,"error":{"message":"x"}}`, 0, `the key "error" twice`},
		{"other key twice", `{"data":[{"id":1},{"id":2}],"links":{},"links":{"self":"x"},"meta":{"x":1,"x":2}}`, 2, ""},
		{"key twice inside a record", `{"data":[{"id":1,"id":1}]}`, 1, ""},
		{"no duplicates", `{"data":[{"id":1},{"id":2}],"meta":{"has_more":false,"total":2}}`, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newAPIServer(t, func(n int, w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, tt.body) })
			spec := strings.Replace(fetchSpec(srv.URL, "  error_path: error\n", ""), "retry:\n", pag+"retry:\n", 1)
			f, _ := newTestFetcher(t, spec, nil)
			resp, err := f.Fetch(context.Background(), contract.Request{URL: srv.URL})
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
			if tt.says == "" {
				if err != nil || len(resp.Records) != tt.records {
					t.Fatalf("%v; want %d records", err, tt.records)
				}
				return
			}
			if err == nil {
				t.Fatalf("a page of %d records, want an error saying %q", len(resp.Records), tt.says)
			}
			if contract.ClassOf(err) != contract.Permanent || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %v (%v), want permanent saying %q", err, contract.ClassOf(err), tt.says)
			}
		})
	}
}
