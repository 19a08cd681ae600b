package jobfile

import (
	"strings"
	"testing"
)

// A job file either means what docs/job-file.md says or is refused with
// the line and the key: these are forms that were read as something else.

const plainSpec = `name: orders
source:
  url: https://api.example.com/v1/orders
  records: data
pagination:
  style: page
  size_param: per_page
  size: 100
target:
  url: sqlite:out/orders.db
  table: orders
  key: [id]
`

// wantRefused loads spec and fails unless it is refused with every one
// of want in the error.
func wantRefused(t *testing.T, spec string, lookup LookupFunc, want ...string) string {
	t.Helper()
	_, err := LoadResources([]byte(spec), "/jobs/orders.yaml", lookup)
	if err == nil {
		t.Fatalf("accepted, want refused naming %q:\n%s", want, spec)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
	return err.Error()
}

func TestSecondDocumentRefused(t *testing.T) {
	spec := plainSpec + "---\nname: other\ntarget: {deletes: hard}\n"
	wantRefused(t, spec, env(nil), "/jobs/orders.yaml", "line 13:", "one YAML document")
}

func TestFractionalIntegerRefused(t *testing.T) {
	for _, tt := range []struct{ spec, line, key string }{
		{strings.Replace(plainSpec, "size: 100", "size: 2.5", 1), "line 8:", "pagination.size"},
		{plainSpec + "retry:\n  attempts: 0.5\n", "line 14:", "retry.attempts"},
		{strings.Replace(plainSpec, "  records: data\n", "  records: data\n  concurrency: ${N}\n", 1), "line 5:", "source.concurrency"},
	} {
		wantRefused(t, tt.spec, env(map[string]string{"N": "1.9"}), tt.line, tt.key, "whole number")
	}
	// A whole number written as a float is that number.
	job, err := Load([]byte(strings.Replace(plainSpec, "size: 100", "size: 1e2", 1)), "/jobs/orders.yaml", env(nil))
	if err != nil || job.Pagination.Size != 100 {
		t.Fatalf("size: 1e2 = %v, %v; want 100", job, err)
	}
}

func TestNestedVariableInDefaultRefused(t *testing.T) {
	spec := strings.Replace(plainSpec, "table: orders", "table: ${TABLE:-${OTHER}}", 1)
	wantRefused(t, spec, env(map[string]string{"OTHER": "x"}), "line 11:", "target.table", "${")
}

func TestSecretNotInValueProblems(t *testing.T) {
	const secret = "supersecretvalue"
	for _, auth := range []string{
		`{type: bearer, token: x, ttl: "${TOK}"}`,
		`{type: "${TOK}", token: x}`,
	} {
		spec := strings.Replace(plainSpec, "  records: data\n", "  records: data\n  auth: "+auth+"\n", 1)
		msg := wantRefused(t, spec, env(map[string]string{"TOK": secret}), "line 5:", "source.auth")
		if strings.Contains(msg, secret) {
			t.Errorf("the value of ${TOK} in source.auth shows in the error: %s", msg)
		}
	}
}

func TestBodyAliasBombNamesKey(t *testing.T) {
	var b strings.Builder
	b.WriteString("{a0: &a0 [x, x, x, x, x, x, x, x, x, x]")
	for i := 1; i < 7; i++ {
		b.WriteString(", a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]")
	}
	b.WriteString("}")
	spec := strings.Replace(plainSpec, "  records: data\n", "  records: data\n  method: POST\n  body: "+b.String()+"\n", 1)
	msg := wantRefused(t, spec, env(nil), "line 6:", "source.body")
	if strings.Contains(msg, "is required") {
		t.Errorf("keys that are set are reported missing: %s", msg)
	}
}

func TestDuplicateKeyUnderDefaultsRefused(t *testing.T) {
	spec := `name: shop
defaults:
  source: {base_url: "https://api.example.com/v1"}
  target: {url: "sqlite:out/shop.db", deletes: keep}
resources:
  - name: orders
    source: {path: /orders, records: data}
    target:
      table: orders
      key: [id]
      deletes: hard
      deletes: keep
`
	wantRefused(t, spec, env(nil), "resource orders", "line 12:", "duplicate key target.deletes")
}

// A header HTTP cannot carry failed every run as a network error to retry
// (exit 3) after validate had passed it.
func TestUnsendableHeaderRefused(t *testing.T) {
	const secret = "tok-secret"
	for _, tt := range []struct{ headers, key string }{
		{`{X-Tenant: "${T}"}`, "source.headers.X-Tenant"},
		{`{"X Tenant": acme}`, "source.headers.X Tenant"},
		{`{"": acme}`, "source.headers"},
		{"{Authorization: \"Bearer tok-secret\\nX-Evil: 1\"}", "source.headers.Authorization"},
	} {
		spec := strings.Replace(plainSpec, "  records: data\n", "  records: data\n  headers: "+tt.headers+"\n", 1)
		msg := wantRefused(t, spec, env(map[string]string{"T": secret + "\r\nX-Evil: 1"}), "line 5:", tt.key)
		if strings.Contains(msg, secret) {
			t.Errorf("a header's value shows in the error: %s", msg)
		}
	}
	spec := strings.Replace(plainSpec, "  records: data\n", "  records: data\n  headers: {X-Tenant: \"a\\tb ü\"}\n", 1)
	if _, err := Load([]byte(spec), "/jobs/orders.yaml", env(nil)); err != nil {
		t.Fatalf("a tab and UTF-8 in a header value are sendable: %v", err)
	}
}

// A token read from a file keeps its line break: sent in a header as
// written, it failed every run as a network error (exit 3).
func TestUnsendableAuthHeaderRefused(t *testing.T) {
	const secret = "tok-secret"
	for _, tt := range []struct{ auth, key string }{
		{`{type: bearer, token: "${T}"}`, "source.auth.token"},
		{`{type: api_key, name: X-Key, value: "${T}"}`, "source.auth.value"},
		{`{type: api_key, name: "X Key", value: v}`, "source.auth.name"},
		{`{type: command, run: [echo], header: "X:Key"}`, "source.auth.header"},
		{`{type: command, run: [echo], prefix: "${T}"}`, "source.auth.prefix"},
	} {
		spec := strings.Replace(plainSpec, "  records: data\n", "  records: data\n  auth: "+tt.auth+"\n", 1)
		msg := wantRefused(t, spec, env(map[string]string{"T": secret + "\n"}), "line 5:", tt.key)
		if strings.Contains(msg, secret) {
			t.Errorf("a credential shows in the error: %s", msg)
		}
	}
	// In the query a value is escaped: any character is sendable.
	spec := strings.Replace(plainSpec, "  records: data\n", "  records: data\n  auth: {type: api_key, name: \"k y\", value: \"${T}\", in: query}\n", 1)
	if _, err := Load([]byte(spec), "/jobs/orders.yaml", env(map[string]string{"T": secret + "\n"})); err != nil {
		t.Fatalf("an api_key in the query is escaped: %v", err)
	}
}

// A zero written for a key with a default was taken for "unset" and
// replaced by the default: attempts: 0 ran 5 attempts though the key is
// "at least 1" (and the editor's schema says so), retention: 0s kept 30
// days.
func TestWrittenZeroNotReadAsDefault(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{plainSpec + "retry:\n  attempts: 0\n", "line 14: retry.attempts: 0 must be at least 1"},
		{strings.Replace(plainSpec, "  records: data\n", "  records: data\n  concurrency: 0\n", 1), "line 5: source.concurrency: 0 must be between 1 and 64"},
		{plainSpec + "retention: 0s\n", "line 13: retention: "},
		{strings.Replace(plainSpec, "  records: data\n", "  records: data\n  timeout: 0s\n", 1), "line 5: source.timeout: "},
		{plainSpec + "  deletes: \"${DELETES}\"\n", `line 13: target.deletes: "" must be keep, soft or hard`},
	} {
		wantRefused(t, tt.spec, env(map[string]string{"DELETES": ""}), tt.want)
	}
}
