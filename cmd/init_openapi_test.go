package cmd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// petstoreAPI serves testdata's Petstore description at /openapi.yaml
// (its server pointed at itself) and the API it describes: 23 pets in
// pages (page, per_page, has_more) and 3 visits per pet behind a cursor
// (limit, next_cursor), bearer token required.
func petstoreAPI(t *testing.T, token string) string {
	t.Helper()
	desc, err := os.ReadFile(filepath.Join("..", "initgen", "testdata", "openapi", "petstore.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi.yaml" {
			_, _ = w.Write([]byte(strings.Replace(string(desc), "http://localhost:4010/v1", srv.URL+"/v1", 1)))
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		q := r.URL.Query()
		if r.URL.Path == "/v1/pets" {
			page, _ := strconv.Atoi(q.Get("page"))
			size, _ := strconv.Atoi(q.Get("per_page"))
			page, size = max(page, 1), max(size, 1)
			data := []map[string]any{}
			for id := (page-1)*size + 1; id <= page*size && id <= 23; id++ {
				data = append(data, map[string]any{"id": id, "name": fmt.Sprint("pet ", id), "born": "2020-01-02T03:04:05Z", "weight": 4.5})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "has_more": page*size < 23})
			return
		}
		var pet int
		if _, err := fmt.Sscanf(r.URL.Path, "/v1/pets/%d/visits", &pet); err != nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		after, _ := strconv.Atoi(q.Get("cursor"))
		body := map[string]any{}
		if after < 3 {
			v := after + 1
			body["visits"] = []map[string]any{{"id": pet*10 + v, "vet": "dr", "paid": true}}
			if v < 3 {
				body["next_cursor"] = strconv.Itoa(v)
			}
		} else {
			body["visits"] = []map[string]any{}
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A file init --openapi writes from a description served over HTTP
// validates, and a run of it syncs the whole API: every pet, and every
// visit of every pet through the parent → child fan-out it derived from
// the path parameter.
func TestInitOpenAPISyncs(t *testing.T) {
	base := petstoreAPI(t, "s3cret")
	dir := t.TempDir()
	out := filepath.Join(dir, "jobs", "pets.yaml")
	r := execute(t, false, "init", "--openapi", base+"/openapi.yaml", "--all", "--out", out)
	if r.code != 0 {
		t.Fatalf("init --openapi: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// It says what it wrote as a person reads it, not as Go prints a map.
	if !strings.Contains(r.stdout, "2 resources (pets: page, pets_visits: cursor)") {
		t.Errorf("init --openapi's summary:\n%s", r.stdout)
	}
	if r := execute(t, false, "validate", out); r.code != 2 || !strings.Contains(r.stderr, "PETSTORE_TOKEN") {
		t.Errorf("validate without the token: exit %d, want 2 naming PETSTORE_TOKEN\n%s", r.code, r.stderr)
	}
	t.Setenv("PETSTORE_TOKEN", "s3cret")
	if r := execute(t, false, "validate", out); r.code != 0 {
		data, _ := os.ReadFile(out)
		t.Fatalf("validate: exit %d\n%s\n%s", r.code, r.stderr, data)
	}
	if r := execute(t, false, "run", out, "--quiet"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	db := filepath.Join(dir, "jobs", "petstore.db")
	if n := countRows(t, db, "pets"); n != 23 {
		t.Errorf("pets: %d rows, want 23", n)
	}
	if n := countRows(t, db, "pets_visits"); n != 69 {
		t.Errorf("pets_visits: %d rows, want 69 (3 for each of 23 pets)", n)
	}
}

// init --openapi URL names the URL without its password and its query's
// values, in its errors (unreachable, HTTP 404, not a description, no list
// operation) and in the file it writes (docs/job-file.md, "What is and is
// not a secret").
func TestInitOpenAPIURLHidesCredentials(t *testing.T) {
	const pw, key = "pw-Hd3Ws7Qe", "qk-Mb6Yn1Lo"
	base := petstoreAPI(t, "s3cret")
	misc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/swagger.json":
			_, _ = w.Write([]byte(`{"swagger":"2.0"}`))
		case "/empty.json":
			_, _ = w.Write([]byte(`{"openapi":"3.0.0","paths":{}}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(misc.Close)
	withCreds := func(u, path string) string {
		return strings.Replace(u, "http://", "http://alice:"+pw+"@", 1) + path + "?api_key=" + key
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		url  string
		code int
	}{
		{withCreds(closed.URL, "/openapi.yaml"), 2},
		{withCreds(misc.URL, "/missing.yaml"), 2},
		{withCreds(misc.URL, "/swagger.json"), 2},
		{withCreds(misc.URL, "/empty.json"), 1},
		{withCreds(base, "/openapi.yaml"), 0},
		{strings.Replace(withCreds(base, "/openapi.yaml"), "http:", "htp:", 1), 2}, // no http(s) URL: a file that is not there
	} {
		out := filepath.Join(dir, fmt.Sprintf("job%d.yaml", tc.code))
		os.Remove(out)
		r := execute(t, false, "init", "--openapi", tc.url, "--all", "--out", out)
		if r.code != tc.code {
			t.Errorf("init --openapi %s: exit %d, want %d\n%s%s", tc.url, r.code, tc.code, r.stdout, r.stderr)
		}
		data, _ := os.ReadFile(out)
		for _, s := range []string{pw, key} {
			for what, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr, "the job file": string(data)} {
				if strings.Contains(text, s) {
					t.Errorf("init --openapi %s: %s holds %s:\n%s", tc.url, what, s, text)
				}
			}
		}
	}
}
