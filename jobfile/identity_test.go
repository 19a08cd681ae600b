package jobfile

import (
	idsync "github.com/idemsync/idemsync/sync"

	"strings"
	"testing"
)

func loadIdentity(t *testing.T, spec string, vars map[string]string) idsync.Identity {
	t.Helper()
	job, err := Load([]byte(spec), "/jobs/orders.yaml", env(vars))
	if err != nil {
		t.Fatal(err)
	}
	return job.Identity()
}

// The walk's identity names what changed, hides secrets, and leaves out
// what never changes a page's records.
func TestIdentityChanges(t *testing.T) {
	vars := map[string]string{"API_TOKEN": "s3cret-token"}
	base := loadIdentity(t, validSpec, vars)
	if v, ok := base["source.headers.Authorization"]; ok || strings.Contains(base.Encode(), "s3cret") {
		t.Fatalf("a credential header is part of the walk, stored as %q", v)
	}
	if got := base.Changes(base); got != nil {
		t.Fatalf("an identity changed from itself: %q", got)
	}
	if got := base.Changes(nil); got != nil {
		t.Fatalf("no stored identity reported changes %q", got)
	}
	for _, tc := range []struct {
		name, spec string
		vars       map[string]string
		want       []string
	}{
		{"page size", strings.Replace(validSpec, "${PAGE_SIZE:-50}", "100", 1), vars, []string{"pagination.size: 50 → 100"}},
		// A ${VAR} outside the source's credentials is not a secret: shown.
		{"page size from a variable", validSpec, map[string]string{"API_TOKEN": "s3cret-token", "PAGE_SIZE": "100"}, []string{"pagination.size: 50 → 100"}},
		// A rotated credential is not another walk.
		{"token", validSpec, map[string]string{"API_TOKEN": "other-token"}, nil},
		{"tenant header", strings.Replace(validSpec, "{Authorization:", "{X-Tenant: acme, Authorization:", 1), vars, []string{"source.headers.X-Tenant: changed"}},
		{"records and table", strings.Replace(strings.Replace(validSpec, "data.items", "items", 1), "table: orders", "table: orders2", 1), vars,
			[]string{"source.records: data.items → items", "target.table: orders → orders2"}},
		{"a default written out", strings.Replace(validSpec, "  style: page\n", "  style: page\n  param: page\n  start: 1\n", 1), vars, nil},
		{"outside the walk", strings.Replace(strings.Replace(validSpec, "  records: data.items\n", "  records: data.items\n  timeout: 5s\n  concurrency: 3\n  rate_limit: 2\n", 1),
			"  max_wait: 10s\n", "  max_wait: 20s\n  attempts: 2\n", 1) + "  on_bad_record: skip\n  create: false\nretention: 7d\n", vars, nil},
	} {
		got := loadIdentity(t, tc.spec, tc.vars).Changes(base)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: changes %q, want %q", tc.name, got, tc.want)
		}
		for _, c := range got {
			if strings.Contains(c, "token") {
				t.Errorf("%s: a change shows a secret: %q", tc.name, c)
			}
		}
	}
}

// incremental.format is checked when the file is loaded.
func TestLoadMarkFormat(t *testing.T) {
	inc := "incremental:\n  field: updated_at\n  param: since\n  format: %s\n"
	for format, ok := range map[string]bool{"as_received": true, "unix_ms": true, `"2006-01-02 15:04"`: true, "iso8601": false, `"15:04"`: false} {
		_, err := Load([]byte(strings.Replace(validSpec, "retry:", strings.Replace(inc, "%s", format, 1)+"retry:", 1)), "/jobs/orders.yaml", env(map[string]string{"API_TOKEN": "s3cret-token"}))
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), "incremental.format") {
			t.Errorf("format %s: %v", format, err)
		}
	}
}

// A query parameter is left out of the walk only when it carries a secret
// under a credential's name: a literal partition_key is a filter.
func TestIdentityQueryCredentials(t *testing.T) {
	spec := func(part string) string {
		return strings.Replace(validSpec, "  records: data.items\n",
			"  records: data.items\n  query: {partition_key: "+part+", api_key: \"${API_KEY}\"}\n", 1)
	}
	base := loadIdentity(t, spec("eu"), map[string]string{"API_TOKEN": "token-one", "API_KEY": "key-one"})
	if got := loadIdentity(t, spec("eu"), map[string]string{"API_TOKEN": "token-one", "API_KEY": "key-two"}).Changes(base); got != nil {
		t.Errorf("a rotated api_key changed the walk: %q", got)
	}
	got := loadIdentity(t, spec("us"), map[string]string{"API_TOKEN": "token-one", "API_KEY": "key-one"}).Changes(base)
	if strings.Join(got, "|") != "source.query.partition_key: eu → us" {
		t.Errorf("a changed partition_key: changes %q", got)
	}
}
