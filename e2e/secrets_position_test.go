package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
)

// An API that echoes the job's X-Api-Key into the position of the next
// page, under a name the job does not know: in a cursor it gives in a
// header or in its body, or in a next URL on its own origin as another
// query parameter. The position is the checkpoint: it is stored without
// the secret (a marker in its place), put back on the request, and
// neither the state file nor status (without the job's environment, or
// without a job file) shows it. A run stopped after the first page
// continues from the stored position: the API must see the exact cursor
// it gave, secret and all, or it answers 400.
func TestSecretsEchoedIntoPosition(t *testing.T) {
	for _, tc := range []struct{ name, pagination string }{
		{"cursor header", "{style: cursor, next_header: X-Next}"},
		{"cursor body", "{style: cursor, next: next}"},
		{"next_url", "{style: cursor, next_url: next}"},
		{"link", "{style: link}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := canary(t, "Pos")
			var (
				mu  gosync.Mutex
				bad []string
			)
			api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				got := r.Header.Get("X-Api-Key")
				cursor, token := r.URL.Query().Get("cursor"), r.URL.Query().Get("token")
				switch {
				case cursor == "" && token == "":
					next := "c1-" + got + ".x"
					switch tc.name {
					case "cursor header":
						w.Header().Set("X-Next", next)
					case "next_url":
						next = "/v1/items?token=" + got + "&cursor=2"
					case "link":
						w.Header().Set("Link", fmt.Sprintf(`</v1/items?token=%s&cursor=2>; rel="next"`, got))
					}
					fmt.Fprintf(w, `{"data":[{"id":1}],"next":%q}`, next)
				case cursor == "c1-"+key+".x" || (cursor == "2" && token == key):
					fmt.Fprint(w, `{"data":[{"id":2}],"next":null}`)
				default:
					mu.Lock()
					bad = append(bad, r.URL.RawQuery)
					mu.Unlock()
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprint(w, `{"error":"unknown cursor"}`)
				}
			}))
			dir := t.TempDir()
			writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: echo
source:
  url: %s/v1/items
  records: data
  headers: {X-Api-Key: "${KEY}"}
pagination: %s
target: {url: "sqlite:out.db", table: items, key: [id]}
`, api, tc.pagination))
			env := []string{"KEY=" + key}
			var rs []result
			do := func(env []string, args ...string) {
				t.Helper()
				r := idemsync(t, dir, env, args...)
				if r.code != 0 {
					t.Fatalf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
				}
				rs = append(rs, r)
			}
			do(env, "run", "job.yaml", "--max-pages", "1", "--log-level", "debug")
			do(nil, "status", "job.yaml")
			do(env, "run", "job.yaml", "--log-level", "debug")
			do(env, "run", "job.yaml", "--json", "--log-format", "json")
			do(nil, "status", "job.yaml", "--json")
			do(nil, "status", "--state", ".idemsync/state.db", "--runs", "5")
			mu.Lock()
			defer mu.Unlock()
			if len(bad) > 0 {
				t.Fatalf("the API got a position it never gave: %q", bad)
			}
			if n := countRows(t, filepath.Join(dir, "out.db"), "items"); n != 2 {
				t.Fatalf("%d rows, want 2", n)
			}
			if !strings.Contains(rs[0].stdout, "checkpoint") {
				t.Fatalf("run --max-pages 1: %s", rs[0].stdout)
			}
			authScanAll(t, dir, &canaryScan{canaries: []string{key}}, rs...)
		})
	}
}
