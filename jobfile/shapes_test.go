package jobfile

import (
	"slices"
	"strings"
	"testing"

	idsync "github.com/idemsync/idemsync/sync"
)

const shapeBase = `name: s
source:
  url: https://api.example.com/graphql
  method: POST
  body:
    query: "query($after: String) { orders(after: $after) { nodes { id } } }"
    variables: {after: null, tenant: "${TENANT}"}
  query: {"expand[]": [customer, items], limit: 5}
pagination: {style: cursor, next: data.next, in: body, param: variables.after}
target: {url: sqlite:out.db, table: t, key: [id]}
`

// A body mapping is sent as JSON with its ${VAR}s expanded; a list in
// source.query repeats the key; a GraphQL body makes error_path default to
// errors.
func TestLoadRequestShapes(t *testing.T) {
	job, err := Load([]byte(shapeBase), "/jobs/s.yaml", env(map[string]string{"TENANT": "acme"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"query":"query($after: String) { orders(after: $after) { nodes { id } } }","variables":{"after":null,"tenant":"acme"}}`
	if string(job.Source.Body) != want {
		t.Errorf("body %s, want %s", job.Source.Body, want)
	}
	if got := job.Source.Query["expand[]"]; !slices.Equal(got, []string{"customer", "items"}) {
		t.Errorf("expand[] = %q", got)
	}
	if got := job.Source.Query["limit"]; !slices.Equal(got, []string{"5"}) {
		t.Errorf("limit = %q", got)
	}
	if job.Source.ErrorPath != "errors" {
		t.Errorf("error_path %q, want errors for a GraphQL body", job.Source.ErrorPath)
	}
	if job.Secrets.Redact("acme") != idsync.Redacted {
		t.Errorf("a ${VAR} in the body is not a secret")
	}
}

// Every POST gets error_path errors by default, a GraphQL persisted query
// (no query in the body) and a body that is no GraphQL at all included; an
// error_path written in the file wins, "" turning the check off; a GET
// gets none.
func TestLoadErrorPathDefault(t *testing.T) {
	persisted := strings.Replace(shapeBase, "    query: \"query($after: String) { orders(after: $after) { nodes { id } } }\"\n",
		"    operationName: Orders\n    extensions: {persistedQuery: {version: 1, sha256Hash: abc}}\n", 1)
	get := `name: s
source: {url: "https://api.example.com/x"}
pagination: {style: cursor, next: data.next}
target: {url: sqlite:out.db, table: t, key: [id]}
`
	for _, c := range []struct{ name, spec, want string }{
		{"persisted query", persisted, "errors"},
		{"a body that is no GraphQL", strings.Replace(shapeBase, "    query: \"query", "    q: \"query", 1), "errors"},
		{"a POST without a body", strings.Replace(get, "source: {", "source: {method: POST, ", 1), "errors"},
		{"written off", strings.Replace(persisted, "  method: POST\n", "  method: POST\n  error_path: \"\"\n", 1), ""},
		{"written", strings.Replace(persisted, "  method: POST\n", "  method: POST\n  error_path: error\n", 1), "error"},
		{"GET", get, ""},
	} {
		job, err := Load([]byte(c.spec), "/jobs/s.yaml", env(map[string]string{"TENANT": "a"}))
		if err != nil {
			t.Errorf("%s: %v\n%s", c.name, err, c.spec)
			continue
		}
		if job.Source.ErrorPath != c.want {
			t.Errorf("%s: error_path %q, want %q", c.name, job.Source.ErrorPath, c.want)
		}
	}
	// Written under defaults: it holds for every resource.
	rs, err := LoadResources([]byte(`name: s
defaults:
  source: {method: POST, error_path: ""}
  target: {url: sqlite:out.db}
resources:
  - name: a
    source: {url: "https://api.example.com/a"}
    pagination: {style: cursor, next: data.next}
    target: {table: a, key: [id]}
  - name: b
    source: {url: "https://api.example.com/b", error_path: error}
    pagination: {style: cursor, next: data.next}
    target: {table: b, key: [id]}
`), "/jobs/s.yaml", env(nil))
	if err != nil || rs[0].Job.Source.ErrorPath != "" || rs[1].Job.Source.ErrorPath != "error" {
		t.Errorf("error_path under defaults: %v, %+v", err, rs)
	}
}

// Positions that cannot go where pagination.in says, and templates that
// cannot be written, are refused naming the key.
func TestLoadRequestShapeProblems(t *testing.T) {
	vars := env(map[string]string{"TENANT": "a"})
	for _, tc := range []struct{ name, from, to, key string }{
		{"body needs POST", "  method: POST\n", "", "pagination.in"},
		{"body must be an object", "  body:\n    query: \"query($after: String) { orders(after: $after) { nodes { id } } }\"\n    variables: {after: null, tenant: \"${TENANT}\"}\n", "  body: \"[1]\"\n", "source.body"},
		{"unknown in", "in: body", "in: cookie", "pagination.in"},
		{"unknown placeholder", "param: variables.after}", "param: variables.after, template: \"{val}\"}", "pagination.template"},
		{"no placeholder", "param: variables.after}", "param: variables.after, template: \"fixed\"}", "pagination.template"},
		{"offset placeholder with cursor", "param: variables.after}", "param: variables.after, template: \"{offset}\"}", "pagination.template"},
		{"next_url takes no in", "next: data.next", "next_url: data.next", "pagination.in"},
		{"link takes no template", "{style: cursor, next: data.next, in: body, param: variables.after}", "{style: link, template: \"{value}\"}", "pagination.template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := strings.Replace(shapeBase, tc.from, tc.to, 1)
			if spec == shapeBase {
				t.Fatalf("replacement %q not in the spec", tc.from)
			}
			_, err := Load([]byte(spec), "/jobs/s.yaml", vars)
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Errorf("got %v, want a problem naming %s", err, tc.key)
			}
		})
	}
}

// Where the position goes is part of the walk: changing pagination.in or
// template, or the body, mid-run is a changed walk.
func TestIdentityRequestShapes(t *testing.T) {
	vars := env(map[string]string{"TENANT": "a"})
	load := func(spec string) idsync.Identity {
		t.Helper()
		job, err := Load([]byte(spec), "/jobs/s.yaml", vars)
		if err != nil {
			t.Fatal(err)
		}
		return job.Identity()
	}
	base := load(shapeBase)
	for _, tc := range []struct{ from, to, key string }{
		{"param: variables.after}", "param: variables.after, template: \"x{value}\"}", "pagination.template"},
		{"in: body, param: variables.after", "in: header, param: X-After", "pagination.in"},
		{"tenant: \"${TENANT}\"", "tenant: other", "source.body"},
		{"[customer, items]", "[customer]", "source.query.expand[]"},
	} {
		got := load(strings.Replace(shapeBase, tc.from, tc.to, 1)).Changes(base)
		if !slices.ContainsFunc(got, func(c string) bool { return strings.HasPrefix(c, tc.key+":") }) {
			t.Errorf("%s → %s: changes %q, want %s named", tc.from, tc.to, got, tc.key)
		}
	}
}

// incremental.step needs end_param (each window sends its upper bound) and
// at least a second.
func TestLoadIncrementalStep(t *testing.T) {
	base := "name: w\nsource: {url: 'https://api.example.com/x'}\nincremental: {field: ts, param: since, %s}\ntarget: {url: sqlite:x.db, table: t, key: [id]}\n"
	for _, tc := range []struct {
		inc, problem string
	}{
		{"end_param: until, step: 1d", ""},
		{"step: 1d", "incremental.step: needs incremental.end_param"},
		{"end_param: until, step: 10ms", "incremental.step: 10ms is shorter than a second"},
	} {
		_, err := Load([]byte(strings.Replace(base, "%s", tc.inc, 1)), "/jobs/w.yaml", env(nil))
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("%s: %v", tc.inc, err)
		case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("%s: %v, want %q", tc.inc, err, tc.problem)
		}
	}
}

// pagination.param with in: body is a plain dot path that source.body
// can hold the position at: a path sjson would skip (a wildcard, #, a
// modifier) sends every page the first page's body, one under a string of
// the body replaces what the body says, and one under a list needs an
// index of that list. Each is refused at load, naming the key.
func TestLoadBodyParamPath(t *testing.T) {
	for _, c := range []struct{ name, body, param, want string }{
		{"wildcard", "{variables: {after: null}}", "variables.after*", "wildcard"},
		{"hash", "{variables: {after: null}}", "variables.#", "wildcard"},
		{"modifier", "{variables: {after: null}}", "variables.after|@this", "wildcard"},
		{"empty part", "{variables: {after: null}}", "variables..after", "empty"},
		{"under a string", `{filter: "open"}`, "filter.cursor", "filter is a string"},
		{"under a number", `{filter: {page: 2}}`, "filter.page.n", "filter.page is a number"},
		{"under a list", `{filter: [{cursor: null}]}`, "filter.cursor", "filter is a list"},
		{"past a list's end", `{filter: [{cursor: null}]}`, "filter.1.cursor", "filter is a list"},
	} {
		spec := strings.NewReplacer("body:\n    query: \"query($after: String) { orders(after: $after) { nodes { id } } }\"\n    variables: {after: null, tenant: \"${TENANT}\"}\n",
			"body: "+c.body+"\n", "param: variables.after", "param: \""+c.param+"\"").Replace(shapeBase)
		_, err := Load([]byte(spec), "/jobs/s.yaml", env(map[string]string{"TENANT": "a"}))
		if err == nil || !strings.Contains(err.Error(), "pagination.param") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error on pagination.param naming %q\n%s", c.name, err, c.want, spec)
		}
	}
	for _, c := range []struct{ body, param string }{
		{"{variables: {after: null}}", "variables.after"},
		{"{variables: {}}", "variables.after"},
		{"{q: x}", "search_after"},
		{`{filter: [{cursor: null}]}`, "filter.0.cursor"},
		{`{filter: null}`, "filter.cursor"},
	} {
		spec := strings.NewReplacer("body:\n    query: \"query($after: String) { orders(after: $after) { nodes { id } } }\"\n    variables: {after: null, tenant: \"${TENANT}\"}\n",
			"body: "+c.body+"\n", "param: variables.after", "param: \""+c.param+"\"").Replace(shapeBase)
		if _, err := Load([]byte(spec), "/jobs/s.yaml", env(map[string]string{"TENANT": "a"})); err != nil {
			t.Errorf("body %s, param %s: %v", c.body, c.param, err)
		}
	}
}
