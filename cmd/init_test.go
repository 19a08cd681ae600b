package cmd

import (
	"bufio"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"

	"gopkg.in/yaml.v3"

	"github.com/idemsync/idemsync/internal/fakeapi"
	idsync "github.com/idemsync/idemsync/sync"
)

// initJob runs `idemsync init URL --out DIR/job.yaml --name NAME`, fails
// the test unless it exits 0, checks that validate accepts the file and
// returns the loaded job.
func initJob(t *testing.T, dir, rawURL, name string) *idsync.Job {
	t.Helper()
	out := filepath.Join(dir, "job.yaml")
	r := execute(t, false, "init", rawURL, "--out", out, "--name", name)
	if r.code != 0 {
		t.Fatalf("init %s: exit %d\n%s%s", rawURL, r.code, r.stdout, r.stderr)
	}
	if r := execute(t, false, "validate", out); r.code != 0 {
		data, _ := os.ReadFile(out)
		t.Fatalf("validate the file init wrote: exit %d\n%s\n%s", r.code, r.stderr, data)
	}
	job, err := jobfile.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// The file init writes for each route of the bundled example API picks
// that route's pagination style, and a run of it copies every record.
func TestInitExampleAPI(t *testing.T) {
	_, base := startAPI(t, fakeapi.Options{Records: 130, PageSize: 50})
	tests := []struct {
		route, style string
		pag          map[string]string // expected pagination keys
	}{
		// The parameters the URL shows are written; a name only a
		// convention gives is a decision (TestInitGuessesAreDecisions).
		{"/page?page=1", "page", map[string]string{"param": "page", "total_pages": "meta.total_pages"}},
		{"/page?page=1&per_page=30", "page", map[string]string{"size_param": "per_page", "size": "30"}},
		{"/offset?offset=0&limit=40", "offset", map[string]string{"param": "offset", "size_param": "limit", "size": "40", "total": "total"}},
		{"/cursor?limit=30&cursor=", "cursor", map[string]string{"param": "cursor", "next": "next_cursor", "size": "30"}},
		{"/cursor-url", "cursor", map[string]string{"next_url": "links.next"}},
		{"/cursor-header?cursor=", "cursor", map[string]string{"param": "cursor", "next_header": "X-Next-Cursor"}},
		{"/link?per_page=40", "link", map[string]string{"size_param": "per_page"}},
		{"/link?relative=1", "link", nil},
		{"/hwm?since=&limit=40", "hwm", map[string]string{"field": "updated_at", "param": "since", "size": "40"}},
		{"/all", "none", nil},
	}
	for _, tt := range tests {
		t.Run(tt.route, func(t *testing.T) {
			dir := t.TempDir()
			job := initJob(t, dir, base+tt.route, "orders")
			if job.Pagination.Style != tt.style {
				t.Errorf("style %q, want %q", job.Pagination.Style, tt.style)
			}
			got := pagKeys(t, filepath.Join(dir, "job.yaml"))
			for k, v := range tt.pag {
				if got[k] != v {
					t.Errorf("pagination.%s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
			if q := job.Source.URL; strings.Contains(q, "offset=") || strings.Contains(q, "limit=") || strings.Contains(q, "since=") || strings.Contains(q, "cursor=") || strings.Contains(q, "page=") {
				t.Errorf("source.url keeps a parameter the pagination sets: %s", job.Source.URL)
			}
			if job.Table.Key[0] != "id" || !strings.HasSuffix(job.Target.URL, filepath.Join(dir, "orders.db")) {
				t.Errorf("key %v, target %s", job.Table.Key, job.Target.URL)
			}
			if r := execute(t, false, "run", filepath.Join(dir, "job.yaml"), "--quiet"); r.code != 0 {
				t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
			}
			if n := countRows(t, filepath.Join(dir, "orders.db"), "orders"); n != 130 {
				t.Errorf("the run copied %d records, want 130", n)
			}
		})
	}
}

// pagKeys reads the pagination block of a job file as strings.
func pagKeys(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Pagination map[string]string `yaml:"pagination"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f.Pagination
}

func countRows(t *testing.T, path, table string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(DISTINCT id) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// serveRecorded serves testdata/init/NAME.json with the headers of
// NAME.headers on every path.
func serveRecorded(t *testing.T, name string) string {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", "init", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	hf, err := os.Open(filepath.Join("testdata", "init", name+".headers"))
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	header := http.Header{}
	sc := bufio.NewScanner(hf)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ": "); ok {
			header.Add(k, v)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range header {
			w.Header()[k] = vs
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// acceptOffers makes the decisions init left open as it offers them: the
// decide: list goes and each commented key with its offered value is
// set, as a user who agrees edits the file.
func acceptOffers(t *testing.T, data string) string {
	t.Helper()
	out := regexp.MustCompile(`(?m)^# init could not decide.*\n#.*\ndecide:\n(  - .*\n)+`).ReplaceAllString(data, "")
	out = regexp.MustCompile(`(?m)^(\s+)# (\w+: \S+)  # decide: .*$`).ReplaceAllString(out, "$1$2")
	if out == data || strings.Contains(out, "decide") {
		t.Fatalf("no decision as documented (a decide: list, each key commented with its offer):\n%s", data)
	}
	return out
}

// Recorded first pages of GitHub's and Stripe's lists give the job files
// docs/pagination.md describes for them, with typed columns. Stripe's
// first page does not show the parameter that takes the last id: init
// offers starting_after as a decision, and validate refuses the file
// until it is made.
func TestInitRecordedAPIs(t *testing.T) {
	tests := []struct {
		recording, path, name string
		records               string
		decide                string // a word of the decision left open
		pag                   map[string]string
		types                 map[string]contract.ColumnType
	}{
		{"github-issues", "/repos/octocat/Hello-World/issues?state=all&per_page=3", "issues", "", "",
			map[string]string{"style": "link", "size_param": "per_page", "size": "3"},
			map[string]contract.ColumnType{"id": "integer", "number": "integer", "title": "text", "user": "json", "labels": "json",
				"locked": "boolean", "created_at": "text", "closed_at": "text", "pull_request": "json", "body": "text"}},
		{"stripe-customers", "/v1/customers?limit=2", "customers", "data", "starting_after",
			map[string]string{"style": "cursor", "param": "starting_after", "next": "data.@reverse.0.id", "has_more": "has_more", "size": "2"},
			map[string]contract.ColumnType{"id": "text", "created": "integer", "balance": "integer", "address": "json",
				"metadata": "json", "delinquent": "boolean", "email": "text", "preferred_locales": "json"}},
	}
	for _, tt := range tests {
		t.Run(tt.recording, func(t *testing.T) {
			dir := t.TempDir()
			base := serveRecorded(t, tt.recording)
			out := filepath.Join(dir, "job.yaml")
			if r := execute(t, false, "init", base+tt.path, "--out", out); r.code != 0 {
				t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
			}
			if tt.decide != "" {
				r := execute(t, false, "validate", out)
				if r.code != 2 || !strings.Contains(r.stderr, tt.decide) {
					t.Fatalf("validate of a file with a decision left open: exit %d, want 2 naming %s\n%s", r.code, tt.decide, r.stderr)
				}
				data, _ := os.ReadFile(out)
				if err := os.WriteFile(out, []byte(acceptOffers(t, string(data))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if r := execute(t, false, "validate", out); r.code != 0 {
				t.Fatalf("validate: exit %d\n%s", r.code, r.stderr)
			}
			job, err := jobfile.LoadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if job.Name != tt.name || job.Source.Records != tt.records || job.Table.Key[0] != "id" {
				t.Errorf("name %q, records %q, key %v", job.Name, job.Source.Records, job.Table.Key)
			}
			got := pagKeys(t, out)
			for k, v := range tt.pag {
				if got[k] != v {
					t.Errorf("pagination.%s = %q, want %q", k, got[k], v)
				}
			}
			for name, typ := range tt.types {
				if c := job.Table.Column(name); c == nil || c.Type != typ {
					t.Errorf("column %s: %+v, want type %s", name, c, typ)
				}
			}
		})
	}
}

// init refuses what it cannot learn from, and never overwrites a file
// unless told to.
func TestInitRefuses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/empty":
			_, _ = w.Write([]byte(`{"data":[]}`))
		case "/private":
			w.WriteHeader(http.StatusUnauthorized)
		case "/html":
			_, _ = w.Write([]byte(`<html>login</html>`))
		default:
			_, _ = w.Write([]byte(`[{"sku":"a","qty":1},{"sku":"b","qty":1}]`))
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	out := filepath.Join(dir, "job.yaml")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{srv.URL + "/empty"}, 1, "no array of objects"},
		{[]string{srv.URL + "/private"}, 1, "HTTP 401"},
		{[]string{srv.URL + "/html"}, 1, "not JSON"},
		{[]string{"ftp://example.com/x"}, 2, "not an http"},
		{[]string{srv.URL + "/items", "--name", "bad name"}, 2, "--name"},
	} {
		r := execute(t, false, append(append([]string{"init"}, tc.args...), "--out", out)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("init %v: exit %d, want %d and %q\n%s", tc.args, r.code, tc.code, tc.want, r.stderr)
		}
	}
	if r := execute(t, false, "init", srv.URL+"/items", "--out", out); r.code != 0 {
		t.Fatalf("init: exit %d\n%s", r.code, r.stderr)
	}
	data, _ := os.ReadFile(out)
	if !strings.Contains(string(data), "# key: [sku]  # decide: no id-like field") {
		t.Errorf("a key only unique on the first page must be a decision:\n%s", data)
	}
	if r := execute(t, false, "validate", out); r.code != 2 || !strings.Contains(r.stderr, "target.key") {
		t.Errorf("validate of a file whose key is a decision: exit %d, want 2 naming target.key\n%s", r.code, r.stderr)
	}
	if r := execute(t, false, "init", srv.URL+"/items", "--out", out); r.code != 2 || !strings.Contains(r.stderr, "--force") {
		t.Errorf("init over an existing file: exit %d\n%s", r.code, r.stderr)
	}
	if r := execute(t, false, "init", srv.URL+"/items", "--out", out, "--force"); r.code != 0 {
		t.Errorf("init --force: exit %d\n%s", r.code, r.stderr)
	}
}

// init --out jobs/orders.yaml in a fresh folder creates jobs/, as the
// README's own first line does (issue 28).
func TestInitCreatesOutFolder(t *testing.T) {
	_, base := startAPI(t, fakeapi.Options{Records: 10, PageSize: 5})
	out := filepath.Join(t.TempDir(), "jobs", "nested", "orders.yaml")
	if r := execute(t, false, "init", base+"/page?page=1", "--out", out); r.code != 0 {
		t.Fatalf("init into a missing folder: exit %d\n%s", r.code, r.stderr)
	}
	if r := execute(t, false, "validate", out); r.code != 0 {
		t.Fatalf("validate: exit %d\n%s", r.code, r.stderr)
	}
}

// A URL that init refuses is named without its password and its query's
// values, which may hold a key: an unknown scheme and a URL that does not
// parse (docs/job-file.md, "What is and is not a secret").
func TestInitRefusedURLHidesCredentials(t *testing.T) {
	const pw, key = "pw-Kx8Vq2Lm", "qk-Zt5Rw9Np"
	for _, raw := range []string{
		"htp://alice:" + pw + "@api.example.com/v1/items?api_key=" + key,
		"http://alice:" + pw + "@[::1/v1/items?api_key=" + key,
		"http://alice:" + pw + "/x?y@api.example.com/v1/items?api_key=" + key, // a password with / and ?
	} {
		r := execute(t, false, "init", raw, "--out", filepath.Join(t.TempDir(), "job.yaml"))
		if r.code != 2 {
			t.Errorf("init %s: exit %d, want 2\n%s", raw, r.code, r.stderr)
		}
		for _, s := range []string{pw, key} {
			if strings.Contains(r.stdout+r.stderr, s) {
				t.Errorf("init %s prints %s:\n%s%s", raw, s, r.stdout, r.stderr)
			}
		}
		if !strings.Contains(r.stderr, "/v1/items") {
			t.Errorf("init %s: the error does not name the URL:\n%s", raw, r.stderr)
		}
	}
}
