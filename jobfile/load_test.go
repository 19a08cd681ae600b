package jobfile

import (
	"github.com/idemsync/idemsync/contract"

	"errors"
	"strings"
	"testing"
	"time"
)

const validSpec = `
name: orders
source:
  url: https://api.example.com/v1/orders
  headers: {Authorization: "Bearer ${API_TOKEN}"}
  records: data.items
pagination:
  style: page
  size_param: per_page
  size: ${PAGE_SIZE:-50}
retry:
  max_wait: 10s
target:
  url: sqlite:out/orders.db
  table: orders
  key: [id]
  columns:
    id: {path: id, type: integer}
    email: customer.email
    total: {path: total, type: numeric}
`

func env(m map[string]string) LookupFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadValid(t *testing.T) {
	job, err := Load([]byte(validSpec), "/jobs/orders.yaml", env(map[string]string{"API_TOKEN": "s3cret-token"}))
	if err != nil {
		t.Fatal(err)
	}
	if job.Pagination.Size != 50 {
		t.Errorf("size = %d, want 50 from the ${PAGE_SIZE:-50} default", job.Pagination.Size)
	}
	if job.Source.Headers["Authorization"] != "Bearer s3cret-token" {
		t.Errorf("header not expanded: %q", job.Source.Headers["Authorization"])
	}
	if job.Target.URL != "sqlite:/jobs/out/orders.db" {
		t.Errorf("target url = %q, want resolved against the job folder", job.Target.URL)
	}
	if job.StatePath != "/jobs/.idemsync/state.db" {
		t.Errorf("state = %q", job.StatePath)
	}
	if job.Retry.Attempts != 5 || job.Retry.MinWait.Duration != time.Second || job.Retry.MaxWait.Duration != 10*time.Second {
		t.Errorf("retry defaults: %+v", job.Retry)
	}
	if *job.Pagination.Start != 1 || job.Pagination.Param != "page" || job.Source.Method != "GET" {
		t.Errorf("pagination defaults: %+v", job.Pagination)
	}
	want := []contract.Column{{Name: "id", Path: "id", Type: contract.TypeInteger}, {Name: "email", Path: "customer.email", Type: contract.TypeText}, {Name: "total", Path: "total", Type: contract.TypeNumeric}}
	if len(job.Table.Columns) != len(want) {
		t.Fatalf("columns = %+v", job.Table.Columns)
	}
	for i, c := range want {
		if job.Table.Columns[i] != c {
			t.Errorf("column %d = %+v, want %+v", i, job.Table.Columns[i], c)
		}
	}
	if got := job.Secrets.Redact("auth Bearer s3cret-token and s3cret-token"); strings.Contains(got, "s3cret") {
		t.Errorf("secret not redacted: %q", got)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want []string // substrings of the error
	}{
		{"unknown key", strings.Replace(validSpec, "records: data.items", "recrods: data.items", 1), []string{"line 6", "unknown key source.recrods", "did you mean records"}},
		{"unknown top key", validSpec + "extra: 1\n", []string{"unknown key extra"}},
		{"missing name", strings.Replace(validSpec, "name: orders", "", 1), []string{"name: is required"}},
		{"bad name", strings.Replace(validSpec, "name: orders", "name: my orders", 1), []string{"line 2", "name"}},
		{"missing url", strings.Replace(validSpec, "  url: https://api.example.com/v1/orders\n", "", 1), []string{"source.url: is required"}},
		{"bad url scheme", strings.Replace(validSpec, "https://api.example.com", "ftp://x", 1), []string{"line 4", "source.url", "http or https"}},
		{"missing key", strings.Replace(validSpec, "  key: [id]\n", "", 1), []string{"target.key: is required"}},
		{"bad style", strings.Replace(validSpec, "style: page", "style: pages", 1), []string{"line 8", "pagination.style", `"pages"`}},
		{"bad duration", strings.Replace(validSpec, "max_wait: 10s", "max_wait: 10 parsecs", 1), []string{"line 12", "invalid duration"}},
		{"missing env var", strings.Replace(validSpec, "${API_TOKEN}", "${NOPE_TOKEN}", 1), []string{"line 5", "NOPE_TOKEN is not set"}},
		{"invalid yaml", "name: [unclosed\n", []string{"line"}},
		{"wrong type", strings.Replace(validSpec, "max_wait: 10s", "attempts: many", 1), []string{"line 12", "retry.attempts", "many"}},
		{"key not in columns", strings.Replace(validSpec, "key: [id]", "key: [uid]", 1), []string{"target.key", `"uid"`}},
		{"bad column type", strings.Replace(validSpec, "type: numeric", "type: money", 1), []string{"line 20", "money"}},
		{"empty", "", []string{"empty"}},
		{"not a mapping", "- a\n- b\n", []string{"mapping"}},
		{"bad target", strings.Replace(validSpec, "sqlite:out/orders.db", "mysql://x", 1), []string{"target.url"}},
		{"cursor without next", strings.Replace(validSpec, "style: page", "style: cursor", 1), []string{"next"}},
		{"bad hwm initial", strings.Replace(validSpec, "style: page\n  size_param: per_page", "style: hwm\n  field: updated_at\n  param: since\n  initial: yesterday\n  size_param: per_page", 1), []string{"pagination.initial", "yesterday"}},
		{"overlap with style none", strings.Replace(validSpec, "style: page\n  size_param: per_page\n  size: ${PAGE_SIZE:-50}", "style: none\n  overlap: 5m", 1), []string{"pagination.overlap", "not used with style none"}},
		{"on_bad_record", strings.Replace(validSpec, "  key: [id]\n", "  key: [id]\n  on_bad_record: ignore\n", 1), []string{"on_bad_record", "ignore"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.spec), "/jobs/orders.yaml", env(map[string]string{"API_TOKEN": "x"}))
			if err == nil {
				t.Fatal("no error")
			}
			if code := contract.ClassOf(err); code != contract.Invalid {
				t.Errorf("exit code %d, want 2", code)
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Errorf("not a *SpecError: %T", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestExpandEnvValueByValue(t *testing.T) {
	// A variable's content never becomes YAML structure.
	spec := strings.Replace(validSpec, "records: data.items", "records: ${RECORDS}", 1)
	job, err := Load([]byte(spec), "", env(map[string]string{"API_TOKEN": "x", "RECORDS": "a\nextra: {evil: 1}"}))
	if err != nil {
		t.Fatal(err)
	}
	if job.Source.Records != "a\nextra: {evil: 1}" {
		t.Errorf("records = %q", job.Source.Records)
	}
	for _, tt := range []struct{ in, want string }{
		{"${A}", "1"}, {"x${A}y", "x1y"}, {"${B:-dflt}", "dflt"}, {"${E:-dflt}", "dflt"}, {"$$A", "$A"}, {"$A", "$A"}, {"cost $5", "cost $5"},
	} {
		got, _, err := expandEnv(tt.in, env(map[string]string{"A": "1", "E": ""}))
		if err != nil || got != tt.want {
			t.Errorf("expandEnv(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, _, err := expandEnv("${A", env(nil)); err == nil {
		t.Error("unterminated reference accepted")
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(validSpec))
	f.Add([]byte("name: x\nsource: {url: 'http://a'}\ntarget: {url: 'sqlite:a', table: t, key: id}\n"))
	f.Add([]byte("name: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		job, err := Load(data, "/x/job.yaml", env(map[string]string{"API_TOKEN": "x"}))
		if err == nil && (job.Name == "" || job.Target.Table == "" || len(job.Target.Key) == 0) {
			t.Fatalf("accepted a spec missing required fields: %+v", job.Spec)
		}
		if err != nil && contract.ClassOf(err) != contract.Invalid {
			t.Fatalf("exit code %d for %v", contract.ClassOf(err), err)
		}
	})
}
