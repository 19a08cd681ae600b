package initgen

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/jobfile"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestOpenAPIGolden")

// Each description gives the resources file of its golden file (go test
// ./initgen -update rewrites them), with the styles its API documents;
// the file validates but for the decisions it lists, each named by
// validate.
func TestOpenAPIGolden(t *testing.T) {
	tests := []struct {
		spec   string
		styles map[string]string // resource → style
		pag    map[string]string // resource.key → value, in the written file
		decide []string          // words of the decisions left open
	}{
		{"petstore.yaml", map[string]string{"pets": "page", "pets_visits": "cursor"},
			map[string]string{"pets.size_param": "per_page", "pets.size": "100", "pets_visits.next": "next_cursor", "pets_visits.parent": "pets",
				"pets_visits.path": "/pets/{parent.id}/visits"}, nil},
		// GitHub documents Link headers with per_page (docs.github.com,
		// "Using pagination in the REST API").
		{"github.json", map[string]string{"organizations": "link", "orgs_repos": "link", "repos_issues": "link", "user_repos": "link"},
			map[string]string{"organizations.size_param": "per_page"}, []string{"{org}", "{owner}", "{repo}"}},
		// Stripe documents starting_after, limit and has_more.
		{"stripe.json", map[string]string{"customers": "cursor", "charges": "cursor", "customers_tax_ids": "cursor", "customers_search": "cursor"},
			map[string]string{"customers.param": "starting_after", "customers.next": "data.@reverse.0.id", "customers.has_more": "has_more",
				"customers_tax_ids.parent": "customers", "customers_tax_ids.path": "/v1/customers/{parent.id}/tax_ids",
				"customers_search.next": "next_page"}, []string{"source.query.query"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			d, err := ReadOpenAPI(context.Background(), filepath.Join("testdata", "openapi", tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			spec, sum, err := BuildOpenAPI(d, OpenAPIOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "openapi", strings.TrimSuffix(tt.spec, filepath.Ext(tt.spec))+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(spec), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if spec != string(want) {
				t.Errorf("the file differs from %s (go test ./initgen -update rewrites it):\n%s", golden, spec)
			}
			styles := sum["styles"].(map[string]string)
			for r, st := range tt.styles {
				if styles[r] != st {
					t.Errorf("resource %s: style %q, want %q (all: %v)", r, styles[r], st, styles)
				}
			}
			for k, v := range tt.pag {
				if !strings.Contains(spec, k[strings.IndexByte(k, '.')+1:]+": ") || !strings.Contains(spec, v) {
					t.Errorf("%s: %q not written", k, v)
				}
			}
			anyVar := func(string) (string, bool) { return "x", true }
			_, err = jobfile.LoadResources([]byte(spec), "/jobs/api.yaml", anyVar)
			decided := strings.Join(sum["decide"].([]string), "\n")
			if len(tt.decide) == 0 {
				if err != nil || decided != "" {
					t.Errorf("the file does not validate: %v\n%s", err, decided)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "decide: left open by idemsync init") {
				t.Errorf("a file with decisions left open validates: %v", err)
			}
			for _, w := range tt.decide {
				if !strings.Contains(decided, w) {
					t.Errorf("no decision names %s:\n%s", w, decided)
				}
			}
		})
	}
}

// --path writes one operation with the parents it fans out from; several
// list operations without --path or --all is a usage error naming them.
func TestOpenAPISelect(t *testing.T) {
	d, err := ReadOpenAPI(context.Background(), filepath.Join("testdata", "openapi", "stripe.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, sum, err := BuildOpenAPI(d, OpenAPIOptions{Path: "/v1/customers/{customer}/tax_ids"})
	if err != nil {
		t.Fatal(err)
	}
	if st := sum["styles"].(map[string]string); len(st) != 2 || st["customers"] == "" || st["customers_tax_ids"] == "" {
		t.Errorf("--path of a child: %v, want it and its parent", st)
	}
	if _, _, err := BuildOpenAPI(d, OpenAPIOptions{}); err == nil || !strings.Contains(err.Error(), "--path") {
		t.Errorf("several list operations without --path or --all: %v", err)
	}
	if _, _, err := BuildOpenAPI(d, OpenAPIOptions{Path: "/v1/nothing"}); err == nil || !strings.Contains(err.Error(), "/v1/nothing") {
		t.Errorf("--path of no list operation: %v", err)
	}
}

// Stripe's search lists take a page parameter that is a token, not a
// number: the response's next_page is sent back as page (stripe.com/docs/search,
// "Pagination"). Sent as 1, 2, 3 it would be refused or read as another
// list. Failed first: style page, param page, has_more.
func TestOpenAPIPageTokenIsCursor(t *testing.T) {
	d, err := ReadOpenAPI(context.Background(), filepath.Join("testdata", "openapi", "stripe.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, sum, err := BuildOpenAPI(d, OpenAPIOptions{Path: "/v1/customers/search"})
	if err != nil {
		t.Fatal(err)
	}
	if st := sum["styles"].(map[string]string)["customers_search"]; st != "cursor" {
		t.Errorf("style %q, want cursor:\n%s", st, spec)
	}
	for _, want := range []string{"\n      param: page\n", "\n      next: next_page\n"} {
		if !strings.Contains(spec, want) {
			t.Errorf("%q not written:\n%s", strings.TrimSpace(want), spec)
		}
	}
	anyVar := func(string) (string, bool) { return "x", true }
	_, err = jobfile.LoadResources([]byte(spec), "/jobs/api.yaml", anyVar)
	var se *jobfile.SpecError
	if !errors.As(err, &se) || len(se.Problems) != 1 || !strings.Contains(se.Problems[0], "source.query.query") {
		t.Errorf("validate: %v, want only the decision on the search query", err)
	}
}

// A required query parameter init cannot fill (Stripe's search query,
// GitHub's Copilot report day) is a decision, not left out: the file
// would validate and every run be refused by the API (400). Failed first:
// the file validated with no decision.
func TestOpenAPIRequiredQueryIsDecided(t *testing.T) {
	d, err := ReadOpenAPI(context.Background(), filepath.Join("testdata", "openapi", "stripe.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec, sum, err := BuildOpenAPI(d, OpenAPIOptions{Path: "/v1/customers/search"})
	if err != nil {
		t.Fatal(err)
	}
	decided := strings.Join(sum["decide"].([]string), "\n")
	if !strings.Contains(decided, "source.query.query") || strings.Contains(decided, "limit") || strings.Contains(decided, "page") {
		t.Errorf("decisions %q, want one for source.query.query only:\n%s", decided, spec)
	}
	anyVar := func(string) (string, bool) { return "x", true }
	_, err = jobfile.LoadResources([]byte(spec), "/jobs/api.yaml", anyVar)
	if err == nil || !strings.Contains(err.Error(), "source.query.query") {
		t.Errorf("validate: %v, want the decision on source.query.query", err)
	}
}
