package initgen

import (
	"strings"
	"testing"
)

// A $ref init cannot resolve (another file's, or a local one that names
// nothing) is an error naming it and the operation's path: the list
// operation, or the columns, it hides would otherwise be left out of a
// file written as if whole. Failed first: /pets left out, /owners written.
func TestOpenAPIUnresolvedRefNamed(t *testing.T) {
	for _, ref := range []string{"./schemas/pet.yaml", "#/components/schemas/Pett"} {
		t.Run(ref, func(t *testing.T) {
			for _, where := range []string{
				`{type: array, items: {$ref: "` + ref + `"}}`,
				`{type: array, items: {type: object, properties: {id: {type: integer}, owner: {$ref: "` + ref + `"}}}}`,
			} {
				spec := `openapi: 3.0.3
info: {title: Pets, version: "1"}
servers: [{url: "https://pets.example.com"}]
components: {schemas: {Pet: {type: object, properties: {id: {type: integer}}}}}
paths:
  /owners:
    get: {responses: {"200": {content: {application/json: {schema: {type: array, items: {$ref: "#/components/schemas/Pet"}}}}}}}
  /pets:
    get: {responses: {"200": {content: {application/json: {schema: ` + where + `}}}}}
`
				d, err := parseOpenAPI([]byte(spec), "pets.yaml")
				if err != nil {
					t.Fatal(err)
				}
				out, _, err := BuildOpenAPI(d, OpenAPIOptions{All: true})
				if err == nil || !strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), "/pets") {
					t.Errorf("%s: %v, want an error naming %s and /pets\n%s", where, err, ref, out)
				}
			}
		})
	}
}
