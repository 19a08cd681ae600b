package e2e

import (
	"fmt"
	"net/http"
	"strings"
	gosync "sync"
	"testing"
)

// A configured header whose value refers to the parent row (a child
// resource's X-Sig: "${SIG}-{parent.id}") is one of the job's headers: it
// never goes to another origin, even one source.follow_origins lists that
// a next URL leads to (docs/job-file.md, "source"). The pages there are
// read without it.
func TestChildHeaderNeverSentToAnotherOrigin(t *testing.T) {
	const sig = "sig-canary-3f9c2a"
	var mu gosync.Mutex
	var leaks []string
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for k, vs := range r.Header {
			if strings.Contains(strings.Join(vs, ","), sig) {
				leaks = append(leaks, k)
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":[{"id":2}],"next":null}`)
	}))
	home := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/stores":
			fmt.Fprint(w, `{"data":[{"id":1}]}`)
		case "/orders":
			if r.Header.Get("X-Sig") != sig+"-1" {
				http.Error(w, "no signature", http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"data":[{"id":1}],"next":%q}`, other+"/orders?store=1&page=2")
		}
	}))
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: shop
defaults:
  retry: {attempts: 2, min_wait: 5ms, max_wait: 20ms}
  target: {url: "sqlite:out.db"}
resources:
  - name: stores
    source: {url: "%s/stores", records: data}
    target: {table: stores, key: [id], columns: {id: {path: id, type: integer}}}
  - name: orders
    parent: stores
    source:
      url: "%s/orders?store={parent.id}"
      records: data
      headers: {X-Sig: "${SIG}-{parent.id}"}
      follow_origins: [%q]
    pagination: {style: cursor, next_url: next}
    target:
      table: orders
      key: [store_id, id]
      columns:
        store_id: {parent: id}
        id: {path: id, type: integer}
`, home, home, other))
	r := idemsync(t, dir, []string{"SIG=" + sig}, "run", job)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaks) > 0 {
		t.Errorf("the other origin got the secret in %q", leaks)
	}
}
