package serve

import _ "embed"

// openapiJSON is the OpenAPI 3 description served at /openapi.json;
// TestOpenAPIDescribesEveryRoute holds it to routeTable and validates the
// replies against it.
//
//go:embed openapi.json
var openapiJSON []byte
