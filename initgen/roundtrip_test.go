package initgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/jobfile"
	"github.com/tidwall/gjson"
)

// A value a hostile page or description puts into a decide: question
// ("${AWS_SECRET_ACCESS_KEY}" as a next cursor, a path parameter's name)
// is written as text: validate, run with the user's environment, names
// the decision as init saw it, never a variable's value (docs/job-file.md,
// "What init refuses to guess").
func TestInitDecisionsAreNotExpanded(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "SECRET_TOKEN" {
			return "sk_live_SUPERSECRET", true
		}
		return "", false
	}
	u, _ := url.Parse("https://api.example.com/v1/things")
	p := &Page{url: u, header: http.Header{}, body: gjson.Parse(`{"data":[{"id":1}],"response_metadata":{"next_cursor":"${SECRET_TOKEN}"}}`)}
	spec, sum, err := Build(p, "things")
	if err != nil {
		t.Fatal(err)
	}
	_, err = jobfile.Load([]byte(spec), "/jobs/things.yaml", env)
	if err == nil || strings.Contains(err.Error(), "SUPERSECRET") || !strings.Contains(err.Error(), "next_cursor, ${SECRET_TOKEN} on the first page") {
		t.Errorf("validate of the written file says %v; want the decision with ${SECRET_TOKEN} as text\n%s", err, spec)
	}
	if d := sum["decide"].([]string); len(d) != 1 || !strings.Contains(d[0], "${SECRET_TOKEN}") {
		t.Errorf("decide = %q", d)
	}

	doc := `openapi: 3.0.0
info: {title: t, version: "1"}
servers: [{url: "https://api.example.org"}]
paths:
  /things/{x${SECRET_TOKEN}}/items:
    get:
      responses: {"200": {content: {application/json: {schema: {type: array, items: {type: object, properties: {id: {type: string}}}}}}}}
`
	d, err := parseOpenAPI([]byte(doc), "api.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, _, err = BuildOpenAPI(d, OpenAPIOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = jobfile.LoadResources([]byte(spec), "/jobs/t.yaml", env)
	if err == nil || strings.Contains(err.Error(), "SUPERSECRET") || strings.Contains(err.Error(), "unterminated") ||
		!strings.Contains(err.Error(), "fills {x${SECRET_TOKEN} (no list operation") {
		t.Errorf("validate of the written file says %v; want the decision with ${SECRET_TOKEN} as text\n%s", err, spec)
	}
}

// A child fanned out from a parent's property ({projectKey}) names the
// parent's column, which init wrote in snake_case (project_key): the
// property's own name is no column of the parent's table
// (docs/job-file.md, "From an OpenAPI description").
func TestOpenAPIChildNamesTheParentsColumn(t *testing.T) {
	doc := `openapi: 3.0.0
info: {title: tracker, version: "1"}
servers: [{url: "https://api.example.org"}]
paths:
  /projects:
    get:
      responses: {"200": {content: {application/json: {schema: {type: array, items: {type: object, properties: {id: {type: integer}, projectKey: {type: string}}}}}}}}
  /projects/{projectKey}/issues:
    get:
      responses: {"200": {content: {application/json: {schema: {type: array, items: {type: object, properties: {id: {type: string}}}}}}}}
`
	d, err := parseOpenAPI([]byte(doc), "api.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, sum, err := BuildOpenAPI(d, OpenAPIOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if decide := sum["decide"].([]string); len(decide) > 0 {
		t.Fatalf("decide = %q", decide)
	}
	rs, err := jobfile.LoadResources([]byte(spec), "/jobs/tracker.yaml", anyVar)
	if err != nil {
		t.Fatalf("the written file does not load: %v\n%s", err, spec)
	}
	child := rs[1].Job
	if child.Source.URL != "https://api.example.org/projects/{parent.project_key}/issues" {
		t.Errorf("child source.url = %q", child.Source.URL)
	}
	var parentCol string
	for _, c := range child.Table.Columns {
		if c.Parent != "" {
			parentCol = c.Parent
		}
	}
	if parentCol != "project_key" {
		t.Errorf("the child's parent column takes %q, want project_key\n%s", parentCol, spec)
	}
}

// A name that YAML reads as null (a URL ending in /null, a description
// titled "null") is written as the text it is: the file's name, table and
// resource are "null", not missing (docs/job-file.md, "Starting from
// idemsync init").
func TestInitNameYAMLReadsAsNull(t *testing.T) {
	u, _ := url.Parse("https://api.example.com/v1/null")
	p := &Page{url: u, header: http.Header{}, body: gjson.Parse(`[{"id":1,"a":2}]`)}
	spec, _, err := Build(p, NameFromURL(u))
	if err != nil {
		t.Fatal(err)
	}
	job, err := jobfile.Load([]byte(spec), "/jobs/null.yaml", anyVar)
	if err != nil {
		t.Fatalf("the written file does not load: %v\n%s", err, spec)
	}
	if job.Name != "null" || job.Table.Name != "null" {
		t.Errorf("name %q, table %q; want null, null", job.Name, job.Table.Name)
	}

	doc := `openapi: 3.0.0
info: {title: "null", version: "1"}
servers: [{url: "https://api.example.org"}]
paths:
  /null:
    get:
      responses: {"200": {content: {application/json: {schema: {type: array, items: {type: object, properties: {id: {type: string}}}}}}}}
`
	d, err := parseOpenAPI([]byte(doc), "api.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, _, err = BuildOpenAPI(d, OpenAPIOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := jobfile.LoadResources([]byte(spec), "/jobs/null.yaml", anyVar)
	if err != nil {
		t.Fatalf("the written file does not load: %v\n%s", err, spec)
	}
	if rs[0].Name != "null" || rs[0].Job.Table.Name != "null" {
		t.Errorf("resource %q, table %q; want null, null", rs[0].Name, rs[0].Job.Table.Name)
	}
}

// The url: init writes is the URL as given, less the parameters the
// pagination sets: a parameter Go's query parser skips (a ';' in it) or
// one without '=' stays as written (docs/job-file.md, "Starting from
// idemsync init").
func TestInitKeepsTheQueryAsGiven(t *testing.T) {
	u, _ := url.Parse("https://api.example.com/v1/things?filter=a;b&expand&z=%2F&page=2&a=1")
	p := &Page{url: u, header: http.Header{}, body: gjson.Parse(`{"data":[{"id":1}],"next_page":3}`)}
	spec, _, err := Build(p, "things")
	if err != nil {
		t.Fatal(err)
	}
	job, err := jobfile.Load([]byte(spec), "/jobs/things.yaml", anyVar)
	if err != nil {
		t.Fatalf("the written file does not load: %v\n%s", err, spec)
	}
	if want := "https://api.example.com/v1/things?filter=a;b&expand&z=%2F&a=1"; job.Source.URL != want {
		t.Errorf("source.url = %q, want %q\n%s", job.Source.URL, want, spec)
	}
}

// A description larger than init reads is refused, naming the limit: cut
// at the limit, YAML still parses (type: stri), and the file written would
// be of a part of the description.
func TestReadOpenAPIRefusesATooLargeDescription(t *testing.T) {
	defer func(n int64) { maxDescription = n }(maxDescription)
	maxDescription = 1000
	body := "openapi: 3.0.0\ninfo: {title: t, version: \"1\"}\n" + strings.Repeat("# padding\n", 200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
	defer srv.Close()
	_, err := ReadOpenAPI(context.Background(), srv.URL+"/openapi.yaml")
	if err == nil || !strings.Contains(err.Error(), "larger than 1000 bytes") {
		t.Errorf("err = %v, want the description refused as larger than 1000 bytes", err)
	}
	maxDescription = int64(len(body))
	if _, err := ReadOpenAPI(context.Background(), srv.URL+"/openapi.yaml"); err != nil {
		t.Errorf("a description of the limit's size: %v", err)
	}
}
