package initgen

import (
	"fmt"
	"strings"
	"testing"
)

// A description is a graph: schemas that each name the next one twice
// (S0 allOf [S1, S1], S1 allOf [S2, S2], ...) are no cycle, but walked as
// a tree they cost 2^depth. Each schema's properties and type are worked
// out once (docs/job-file.md, "From an OpenAPI description"), so init
// reads such a description in time linear in its size. Failed first:
// init never returned (2^40 walks).
func TestOpenAPISharedSchemasWalkedOnce(t *testing.T) {
	const depth = 40
	var b strings.Builder
	b.WriteString("openapi: 3.0.0\ninfo: {title: t, version: \"1\"}\ncomponents:\n  schemas:\n")
	for i := 0; i < depth; i++ {
		next := fmt.Sprintf("{$ref: \"#/components/schemas/S%d\"}", i+1)
		fmt.Fprintf(&b, "    S%d: {allOf: [%s, %s], anyOf: [%s, %s], properties: {f%d: {type: integer}}}\n", i, next, next, next, next, i)
	}
	fmt.Fprintf(&b, "    S%d: {properties: {id: {type: integer}}}\n", depth)
	b.WriteString("paths:\n  /a:\n    get:\n      responses: {\"200\": {content: {application/json: {schema: {type: array, items: {$ref: \"#/components/schemas/S0\"}}}}}}\n")
	d, err := parseOpenAPI([]byte(b.String()), "api.yaml")
	if err != nil {
		t.Fatal(err)
	}
	props := d.props(d.obj(map[string]any{"$ref": "#/components/schemas/S0"}))
	if len(props) != depth+1 {
		t.Errorf("%d properties merged, want %d", len(props), depth+1)
	}
	if typ := d.typeOf(d.obj(map[string]any{"$ref": "#/components/schemas/S0"})); typ != "object" {
		t.Errorf("type %q, want object", typ)
	}
	if d.walks > 20*depth {
		t.Errorf("%d schema walks for %d schemas, want at most %d", d.walks, depth+1, 20*depth)
	}
	if _, _, err := BuildOpenAPI(d, OpenAPIOptions{All: true}); err != nil {
		t.Fatal(err)
	}
}
