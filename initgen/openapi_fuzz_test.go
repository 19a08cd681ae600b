package initgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/jobfile"
)

// FuzzOpenAPI reads hostile bytes as an OpenAPI description (init
// --openapi of a file or URL one does not control). Reading and writing
// never panic; a file written is one the loader reads, and it refuses it
// for nothing but the decisions it lists (docs/job-file.md, "From an
// OpenAPI description: init --openapi"): a title, path or parameter
// name cannot break the YAML written around it.
func FuzzOpenAPI(f *testing.F) {
	// The petstore only: github.json and stripe.json (100 KB, 1 MB) are
	// too large for mutations to get anywhere.
	b, err := os.ReadFile(filepath.Join("testdata", "openapi", "petstore.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("openapi: 3.1.0\ninfo: {title: \"a: b\\n#c\", version: \"'\"}\npaths:\n  \"/x y/{id}\":\n    get:\n      responses: {\"200\": {content: {application/json: {schema: {type: array, items: {type: object, properties: {id: {type: string}}}}}}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseOpenAPI(data, "api.yaml")
		if err != nil {
			return
		}
		spec, sum, err := BuildOpenAPI(d, OpenAPIOptions{All: true})
		if err != nil {
			return
		}
		anyVar := func(string) (string, bool) { return "x", true }
		_, err = jobfile.LoadResources([]byte(spec), "/jobs/api.yaml", anyVar)
		if err == nil {
			return
		}
		if len(sum["decide"].([]string)) == 0 || !strings.Contains(err.Error(), "decide: left open by idemsync init") {
			t.Fatalf("the written file does not load: %v\n%s", err, spec)
		}
	})
}
