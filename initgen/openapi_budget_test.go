package initgen

import (
	"fmt"
	"strings"
	"testing"
)

// Schemas merged through a long allOf chain (S0 allOf [S1], S1 allOf
// [S2], … each adding a property) make each schema's merged properties as
// many as the chain below it: worked out for every schema on the chain,
// n²/2 properties copied. 300,000 of them in a 33 MB description took
// init over 13 GB and ten minutes before it was stopped. The properties
// merged are bounded: over the bound the description is refused, naming
// it, rather than read in memory and time quadratic in its size.
func TestOpenAPIMergeBounded(t *testing.T) {
	old := maxMerged
	maxMerged = 100_000
	t.Cleanup(func() { maxMerged = old })
	const depth = 2000 // about 2,000,000 properties copied unbounded
	var b strings.Builder
	b.WriteString("openapi: 3.0.0\ninfo: {title: t, version: \"1\"}\nservers: [{url: \"https://api.example.com\"}]\ncomponents:\n  schemas:\n")
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, "    S%d: {allOf: [{$ref: \"#/components/schemas/S%d\"}], properties: {f%d: {type: integer}}}\n", i, i+1, i)
	}
	fmt.Fprintf(&b, "    S%d: {properties: {id: {type: integer}}}\n", depth)
	b.WriteString("paths:\n  /a:\n    get:\n      responses: {\"200\": {content: {application/json: {schema: {type: array, items: {$ref: \"#/components/schemas/S0\"}}}}}}\n")
	d, err := parseOpenAPI([]byte(b.String()), "api.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = BuildOpenAPI(d, OpenAPIOptions{All: true})
	if err == nil || !strings.Contains(err.Error(), "api.yaml") || !strings.Contains(err.Error(), "allOf") {
		t.Fatalf("BuildOpenAPI of a %d-deep allOf chain with a bound of %d properties merged: %v, want a refusal naming the file and allOf", depth, maxMerged, err)
	}
	if d.merged > 2*maxMerged {
		t.Errorf("%d properties merged before the refusal, bound %d", d.merged, maxMerged)
	}
}
