package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A next page or a redirect that leads to another origin is refused by
// default (exit 1), naming the origin and source.follow_origins, before
// any DNS lookup of the foreign host (.invalid never resolves: a lookup
// would fail with "no such host"). The pages before it are kept.
func TestOriginRefusedByDefault(t *testing.T) {
	const foreign = "https://api.github.invalid"
	home := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, foreign+"/items", http.StatusFound)
			return
		case "/link":
			w.Header().Set("Link", fmt.Sprintf(`<%s/items?page=2>; rel="next"`, foreign))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[{"id":1},{"id":2}],"next":%q}`, foreign+"/items?cursor=2")
	}))
	for _, tc := range []struct {
		name, path, pagination string
		rows                   int
	}{
		{"link header", "/link", "{style: link}", 2},
		{"next_url", "/cursor", "{style: cursor, next_url: next}", 2},
		{"redirect", "/redirect", "{style: none}", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: origin
source:
  url: %s%s
  records: data
pagination: %s
retry: {attempts: 3, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id]}
`, home, tc.path, tc.pagination))
			r := idemsync(t, dir, nil, "run", "job.yaml")
			if r.code != 1 || !strings.Contains(r.stderr, foreign) || !strings.Contains(r.stderr, "source.follow_origins") {
				t.Fatalf("exit %d, want 1 naming %s and source.follow_origins:\n%s", r.code, foreign, r.stderr)
			}
			for _, dns := range []string{"lookup", "no such host", "dial tcp"} {
				if strings.Contains(r.stderr, dns) {
					t.Errorf("the foreign host was looked up (%q):\n%s", dns, r.stderr)
				}
			}
			if tc.rows > 0 {
				if n := authRows(t, dir); n != tc.rows {
					t.Errorf("%d rows, want %d (the pages before the refusal)", n, tc.rows)
				}
			}
			j := runCode(t, dir, nil, 1, "run", "job.yaml")
			if !strings.Contains(j.Error, foreign) || !strings.Contains(j.Error, "refused") {
				t.Errorf("run --json error: %q", j.Error)
			}
			// The request is named once: not "fetch URL: GET URL: …".
			if n := strings.Count(j.Error, foreign+"/items"); n > 1 {
				t.Errorf("the error names the request %d times (a duplicated prefix): %q", n, j.Error)
			}
		})
	}
}
