package cmd

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A URL given to init with a password (https://user:PASS@host) or a key in
// its query (?api_key=KEY) is fetched with them, but the file written holds
// them as ${VAR}s, never in clear text: the job file is meant to be kept
// and shared. With the variables set, the file validates and a run sends
// the same credentials (docs/job-file.md, "Starting from idemsync init").
func TestInitURLCredentialsWrittenAsVariables(t *testing.T) {
	const pw, key = "pw-Qz4Ye8Rt", "qk-Vn2Lp7Ws"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != "alice" || p != pw || r.URL.Query().Get("api_key") != key {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"data": [{"id": 1, "n": "a"}, {"id": 2, "n": "b"}]}`))
	}))
	t.Cleanup(api.Close)
	raw := strings.Replace(api.URL, "http://", "http://alice:"+pw+"@", 1) + "/v1/items?api_key=" + key + "&expand=owner"
	out := filepath.Join(t.TempDir(), "items.yaml")
	r := execute(t, false, "init", raw, "--out", out)
	if r.code != 0 {
		t.Fatalf("init: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, _ := os.ReadFile(out)
	for _, s := range []string{pw, key} {
		for what, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr, "the job file": string(data)} {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the secret %s:\n%s", what, s, text)
			}
		}
	}
	for _, v := range []string{"ITEMS_PASSWORD", "ITEMS_API_KEY"} {
		if !strings.Contains(string(data), "${"+v+"}") {
			t.Errorf("the job file does not name ${%s}:\n%s", v, data)
		}
		if !strings.Contains(r.stdout, v) {
			t.Errorf("init's output does not name %s to set:\n%s", v, r.stdout)
		}
	}
	t.Setenv("ITEMS_PASSWORD", pw)
	t.Setenv("ITEMS_API_KEY", key)
	if r := execute(t, false, "run", out); r.code != 0 {
		t.Fatalf("run with the variables set: exit %d\n%s%s\n%s", r.code, r.stdout, r.stderr, data)
	}
	if n := countRows(t, filepath.Join(filepath.Dir(out), "items.db"), "items"); n != 2 {
		t.Errorf("items: %d rows, want 2", n)
	}
}

// A URL whose query asks from a position (?cursor=XYZ, ?starting_after=,
// ?page_token=, ?after=: a later page's URL copied from a browser) on a
// page that shows no sign of more is the last page of a walk, not the
// whole list: a file of style none keeping that position would copy that
// page alone and exit 0 over every record before it. Which page the walk
// starts from is a decision.
func TestInitPositionInURLIsDecided(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"data": [{"id": 91, "n": "a"}, {"id": 92, "n": "b"}], "next_cursor": null}`))
	}))
	t.Cleanup(api.Close)
	for _, q := range []string{"cursor=XYZ", "starting_after=obj_90&limit=10", "page_token=CAIQAA", "after=NTI1", "pageToken=abc", "next_token=t1", "marker=k9"} {
		t.Run(q, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "items.yaml")
			if r := execute(t, false, "init", api.URL+"/v1/items?"+q, "--out", out); r.code != 0 {
				t.Fatalf("init: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			data, _ := os.ReadFile(out)
			r := execute(t, false, "validate", out)
			if r.code != 2 || !strings.Contains(r.stderr, "source.url") {
				t.Errorf("validate of a file keeping the position %s: exit %d, want 2 naming source.url\n%s\n%s", q, r.code, r.stderr, data)
			}
		})
	}
	// A position parameter sent empty (?cursor=) asks for the first page.
	out := filepath.Join(t.TempDir(), "items.yaml")
	if r := execute(t, false, "init", api.URL+"/v1/items?cursor=", "--out", out); r.code != 0 {
		t.Fatalf("init: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := execute(t, false, "validate", out); r.code != 0 {
		t.Errorf("validate of a file asking from the first page (?cursor=): exit %d\n%s", r.code, r.stderr)
	}
}

// A field ending in _id that is unique on the first page may still name
// another record (an order's user_id, customer_id): keyed by it, a run
// keeps one order per user, the last read winning, and exits 0. Only a
// name that names the records themselves (order_id on /orders) is taken
// as their key; another is a decision.
func TestInitForeignIDKeyIsDecided(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/orders":
			_, _ = w.Write([]byte(`{"data": [{"user_id": 1, "total": 5}, {"user_id": 2, "total": 7}]}`))
		case "/v1/categories":
			_, _ = w.Write([]byte(`{"data": [{"categoryId": "c1", "user_id": 1}, {"categoryId": "c2", "user_id": 1}]}`))
		case "/v1/order-lines":
			_, _ = w.Write([]byte(`{"data": [{"order_line_id": 1, "order_id": 9}, {"order_line_id": 2, "order_id": 9}]}`))
		}
	}))
	t.Cleanup(api.Close)
	out := filepath.Join(t.TempDir(), "orders.yaml")
	if r := execute(t, false, "init", api.URL+"/v1/orders", "--out", out); r.code != 0 {
		t.Fatalf("init: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, _ := os.ReadFile(out)
	if r := execute(t, false, "validate", out); r.code != 2 || !strings.Contains(r.stderr, "target.key") {
		t.Errorf("validate of a file keyed by user_id on /orders: exit %d, want 2 naming target.key\n%s\n%s", r.code, r.stderr, data)
	}
	for path, key := range map[string]string{"/v1/categories": "categoryId", "/v1/order-lines": "order_line_id"} {
		job := initJob(t, t.TempDir(), api.URL+path, strings.TrimPrefix(path, "/v1/"))
		if len(job.Target.Key) != 1 || job.Target.Key[0] != strings.ToLower(strings.ReplaceAll(key, "Id", "_id")) {
			t.Errorf("init %s: key %v, want the records' own %s", path, job.Target.Key, key)
		}
	}
}
