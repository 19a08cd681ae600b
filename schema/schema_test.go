package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/jobfile"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite job.schema.json from the Go types")

// The committed schema is the generator's output: edit jobfile/spec/spec.go or
// jobfile/rules.go, then run go test ./schema -update.
func TestCommittedSchemaIsCurrent(t *testing.T) {
	got := JSON()
	if *update {
		if err := os.WriteFile("job.schema.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("job.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("schema/job.schema.json is stale: run `go test ./schema -update` and commit it")
	}
}

// compile returns the validator of the generated schema.
func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(JSON()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("job.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("job.schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// validateYAML checks a job file as written (before ${VAR} expansion)
// against the schema, as an editor does.
func validateYAML(t *testing.T, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("to JSON: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

func noEnv(string) (string, bool) { return "", false }

func TestExamplesValidate(t *testing.T) {
	s := compile(t)
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(data, []byte("# yaml-language-server: $schema=../schema/job.schema.json\n")) {
				t.Error("the first line is not the yaml-language-server $schema comment")
			}
			if err := validateYAML(t, s, data); err != nil {
				t.Errorf("schema: %v", err)
			}
			abs, _ := filepath.Abs(f)
			// The GitHub example needs a token and an organisation.
			env := func(k string) (string, bool) {
				v, ok := map[string]string{"GITHUB_TOKEN": "x", "GITHUB_ORG": "my-org"}[k]
				return v, ok
			}
			if _, err := jobfile.LoadResources(data, abs, env); err != nil {
				t.Errorf("loader: %v", err)
			}
		})
	}
}

// minimal specs: every key listed in removable is needed; taking any one
// of them out must make both the loader and the schema reject the file.
// Keys not listed (style selectors) are kept.
var minimal = []struct {
	name      string
	spec      string
	removable []string
}{
	{"none", `
name: orders
source: {url: "https://api.example.com/orders"}
target: {url: "sqlite:out.db", table: orders, key: [id]}
`, []string{"name", "source", "source.url", "target", "target.url", "target.table", "target.key"}},
	{"offset", `
name: orders
source: {url: "https://api.example.com/orders"}
pagination: {style: offset, size: 100}
target: {url: "sqlite:out.db", table: orders, key: id}
`, []string{"pagination.size"}},
	{"cursor", `
name: orders
source: {url: "https://api.example.com/orders"}
pagination: {style: cursor, next: meta.next}
target: {url: "sqlite:out.db", table: orders, key: id}
`, []string{"pagination.next"}},
	{"hwm", `
name: orders
source: {url: "https://api.example.com/orders"}
pagination: {style: hwm, field: updated_at, param: since, size: 100, size_param: limit}
target: {url: "sqlite:out.db", table: orders, key: id}
`, []string{"pagination.field", "pagination.param", "pagination.size"}},
	{"page sized", `
name: orders
source: {url: "https://api.example.com/orders"}
pagination: {style: page, size: 50, size_param: per_page}
target: {url: "sqlite:out.db", table: orders, key: id}
`, []string{"pagination.size_param"}},
	{"incremental", `
name: orders
source: {url: "https://api.example.com/orders"}
incremental: {field: updated_at, param: updated_since}
target: {url: "sqlite:out.db", table: orders, key: id}
`, []string{"incremental.field", "incremental.param"}},
	{"auth", `
name: orders
source: {url: "https://api.example.com/orders", auth: {type: bearer, token: abc123}}
target: {url: "sqlite:out.db", table: orders, key: id}
`, []string{"source.auth.type"}},
	{"tombstone", `
name: orders
source: {url: "https://api.example.com/orders"}
target: {url: "sqlite:out.db", table: orders, key: id, deletes: hard, tombstone: {field: deleted, value: true}}
`, []string{"target.tombstone.field", "target.tombstone.value"}},
}

func TestRequiredKeysAgree(t *testing.T) {
	s := compile(t)
	covered := map[string]bool{}
	for _, m := range minimal {
		t.Run(m.name, func(t *testing.T) {
			if err := validateYAML(t, s, []byte(m.spec)); err != nil {
				t.Fatalf("schema rejects the minimal spec: %v", err)
			}
			if _, err := jobfile.Load([]byte(m.spec), "/jobs/orders.yaml", noEnv); err != nil {
				t.Fatalf("loader rejects the minimal spec: %v", err)
			}
			for _, key := range m.removable {
				covered[key] = true
				data := without(t, m.spec, key)
				if err := validateYAML(t, s, data); err == nil {
					t.Errorf("without %s: the schema accepts the spec, the loader requires the key", key)
				}
				_, err := jobfile.Load(data, "/jobs/orders.yaml", noEnv)
				if err == nil {
					t.Errorf("without %s: the loader accepts the spec, the schema requires the key", key)
				} else if last := key[strings.LastIndex(key, ".")+1:]; !strings.Contains(err.Error(), last) {
					t.Errorf("without %s: the loader's error does not name it: %v", key, err)
				}
			}
		})
	}
	// Every key the schema requires somewhere is exercised above.
	for _, key := range requiredKeys(Job(), "") {
		if !covered[key] {
			t.Errorf("the schema requires %s but no minimal spec checks the loader agrees", key)
		}
	}
	// A cursor spec needs exactly one next key: each alone is valid.
	for _, alt := range []string{"next_header: X-Next", "next_url: links.next"} {
		spec := strings.Replace(minimal[2].spec, "next: meta.next", alt, 1)
		if err := validateYAML(t, s, []byte(spec)); err != nil {
			t.Errorf("%s: schema: %v", alt, err)
		}
		if _, err := jobfile.Load([]byte(spec), "", noEnv); err != nil {
			t.Errorf("%s: loader: %v", alt, err)
		}
	}
	both := strings.Replace(minimal[2].spec, "next: meta.next", "next: meta.next, next_url: links.next", 1)
	if validateYAML(t, s, []byte(both)) == nil {
		t.Error("the schema accepts a cursor spec with both next and next_url")
	}
	if _, err := jobfile.Load([]byte(both), "", noEnv); err == nil {
		t.Error("the loader accepts a cursor spec with both next and next_url")
	}
}

// requiredKeys lists the dotted paths the schema requires, conditional
// requirements (allOf/if/then) included.
func requiredKeys(s *Schema, path string) []string {
	var out []string
	if s == nil {
		return nil
	}
	for _, r := range s.Required {
		out = append(out, join(path, r))
	}
	if s.Properties != nil {
		for _, p := range *s.Properties {
			out = append(out, requiredKeys(p.Schema, join(path, p.Name))...)
		}
	}
	for _, a := range s.AllOf {
		out = append(out, requiredKeys(a.Then, path)...)
		if a.Then != nil { // one-of choices (cursor's next keys) are checked apart
			out = append(out, requiredKeys(a.Then.Then, path)...)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// without returns spec with the dotted key removed.
func without(t *testing.T, spec, key string) []byte {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(spec), &m); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(key, ".")
	cur := m
	for _, p := range parts[:len(parts)-1] {
		cur = cur[p].(map[string]any)
	}
	delete(cur, parts[len(parts)-1])
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The schema rejects what the loader rejects for the common mistakes, and
// accepts ${VAR} wherever a value is not a free string.
func TestSchemaCases(t *testing.T) {
	s := compile(t)
	const base = `
name: orders
source:
  url: https://api.example.com/orders
  timeout: 30s
pagination:
  style: page
  size_param: per_page
  size: 50
target:
  url: sqlite:out.db
  table: orders
  key: [id]
  columns:
    id: {path: id, type: integer}
    email: customer.email
`
	env := func(name string) (string, bool) {
		v, ok := map[string]string{"PAGE_SIZE": "25", "STYLE": "page", "CREATE": "false"}[name]
		return v, ok
	}
	tests := []struct {
		name, from, to string
		valid          bool
	}{
		{"base", "", "", true},
		{"unknown key", "  timeout: 30s\n", "  timeout: 30s\n  timout: 5s\n", false},
		{"bad style", "style: page", "style: pages", false},
		{"bad duration", "timeout: 30s", "timeout: 30 parsecs", false},
		{"bad column type", "type: integer", "type: money", false},
		{"reserved column", "email: customer.email", "_idemsync_hash: x", false},
		{"bad name", "name: orders", "name: my orders", false},
		{"bad target", "url: sqlite:out.db", "url: mysql://db/x", false},
		{"bad method", "  timeout: 30s\n", "  timeout: 30s\n  method: PUT\n", false},
		{"lowercase method", "  timeout: 30s\n", "  timeout: 30s\n  method: post\n", true},
		{"size from env", "size: 50", "size: ${PAGE_SIZE:-50}", true},
		{"style from env", "style: page", "style: ${STYLE}", true},
		{"bool from env", "  key: [id]\n", "  key: [id]\n  create: ${CREATE}\n", true},
		{"size is a word", "size: 50", "size: fifty", false},
		{"numeric query", "  timeout: 30s\n", "  timeout: 30s\n  query: {limit: 100, archived: false}\n", true},
		{"key shorthand", "key: [id]", "key: id", true},
		{"max_body", "  timeout: 30s\n", "  timeout: 30s\n  max_body: 10MiB\n", true},
		{"bad max_body", "  timeout: 30s\n", "  timeout: 30s\n  max_body: lots\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := strings.Replace(base, tt.from, tt.to, 1)
			if spec == base && tt.from != "" {
				t.Fatalf("%q not found in the base spec", tt.from)
			}
			serr := validateYAML(t, s, []byte(spec))
			_, lerr := jobfile.Load([]byte(spec), "/jobs/orders.yaml", env)
			if (serr == nil) != tt.valid {
				t.Errorf("schema: valid=%v, want %v (%v)", serr == nil, tt.valid, serr)
			}
			if (lerr == nil) != tt.valid {
				t.Errorf("loader: valid=%v, want %v (%v)", lerr == nil, tt.valid, lerr)
			}
		})
	}
}

// jobfile/rules.go has no rule for a key that no longer exists.
func TestRulesHaveNoStaleKeys(t *testing.T) {
	keys := map[string]bool{"": true, "target.columns.*.path": true, "target.columns.*.type": true, "target.columns.*.parent": true, "source.base_url": true, "source.path": true, "retry.on_status[]": true}
	for _, p := range *child().Properties { // a child's keys sit in its definition
		keys["target.children.*."+p.Name] = true
	}
	var walk func(s *Schema, path string)
	walk = func(s *Schema, path string) {
		if s == nil || s.Properties == nil {
			return
		}
		for _, p := range *s.Properties {
			keys[join(path, p.Name)] = true
			walk(p.Schema, join(path, p.Name))
		}
	}
	walk(Job(), "")
	for k := range rules {
		if !keys[k] {
			t.Errorf("jobfile/rules.go has a rule for %q, which is not a key of the job file", k)
		}
	}
}
