package initgen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/jobfile"
)

// Each security scheme idemsync sends becomes source.auth with its
// secrets as ${VAR}s, and the file validates; a scheme it does not send
// is a decision; a Swagger 2.0 file or a missing one is refused.
func TestOpenAPIAuth(t *testing.T) {
	tests := []struct{ scheme, want string }{
		{`{type: http, scheme: bearer}`, `auth: {type: bearer, token: "${SHOP_TOKEN}"}`},
		{`{type: http, scheme: basic}`, `auth: {type: basic, username: "${SHOP_USERNAME}", password: "${SHOP_PASSWORD}"}`},
		{`{type: apiKey, in: header, name: X-Api-Key}`, `auth: {type: api_key, name: X-Api-Key, in: header, value: "${SHOP_API_KEY}"}`},
		{`{type: apiKey, in: query, name: key}`, `auth: {type: api_key, name: key, in: query, value: "${SHOP_API_KEY}"}`},
		{`{type: oauth2, flows: {clientCredentials: {tokenUrl: "https://auth.example.com/token", scopes: {}}}}`,
			`auth: {type: oauth2_client_credentials, token_url: https://auth.example.com/token, client_id: "${SHOP_CLIENT_ID}", client_secret: "${SHOP_CLIENT_SECRET}"}`},
		{`{type: apiKey, in: cookie, name: session}`, `decide`},
	}
	for _, tt := range tests {
		t.Run(tt.scheme, func(t *testing.T) {
			spec := `openapi: 3.1.0
info: {title: Shop, version: "1"}
servers: [{url: "https://shop.example.com/api"}]
security: [{s: []}]
components: {securitySchemes: {s: ` + tt.scheme + `}}
paths:
  /orders:
    get:
      responses:
        "200":
          content:
            application/json:
              schema: {type: array, items: {type: object, properties: {id: {type: string}, total: {type: [number, "null"]}}}}
`
			path := filepath.Join(t.TempDir(), "shop.yaml")
			if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := ReadOpenAPI(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			out, sum, err := BuildOpenAPI(d, OpenAPIOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, lerr := jobfile.LoadResources([]byte(out), "/jobs/shop.yaml", func(string) (string, bool) { return "x", true })
			if tt.want == "decide" {
				if len(sum["decide"].([]string)) != 1 || lerr == nil || !strings.Contains(lerr.Error(), "source.auth") {
					t.Errorf("a cookie key must be a decision validate refuses: %v\n%s", lerr, out)
				}
				return
			}
			if !strings.Contains(out, tt.want) || lerr != nil {
				t.Errorf("want %s, validating; got %v\n%s", tt.want, lerr, out)
			}
			if !strings.Contains(out, "total: {path: total, type: numeric}") || !strings.Contains(out, "style: none") {
				t.Errorf("3.1 nullable number column or style none missing:\n%s", out)
			}
		})
	}
	dir := t.TempDir()
	swagger := filepath.Join(dir, "swagger.json")
	if err := os.WriteFile(swagger, []byte(`{"swagger":"2.0","paths":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{swagger, filepath.Join(dir, "missing.yaml")} {
		if _, err := ReadOpenAPI(context.Background(), p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("ReadOpenAPI(%s): %v, want an error naming it", p, err)
		}
	}
}

// A security requirement that names several schemes needs them all
// (Algolia's application id and API key, two headers): source.auth sends
// one, so init leaves the choice open rather than write one of them and a
// file whose every request is refused (401). Alternatives ([{a: []}, {b:
// []}]) are each enough: one is written. Failed first: the application id
// written alone, no decision.
func TestOpenAPIAuthSchemesTogether(t *testing.T) {
	for _, tt := range []struct{ security, want string }{
		{`[{appId: [], apiKey: []}]`, "decide"},
		{`[{appId: [], apiKey: []}, {bearer: []}]`, `auth: {type: bearer, token: "${SEARCH_TOKEN}"}`},
		{`[{apiKey: []}, {appId: []}]`, `auth: {type: api_key, name: X-Algolia-API-Key, in: header, value: "${SEARCH_API_KEY}"}`},
	} {
		t.Run(tt.security, func(t *testing.T) {
			spec := `openapi: 3.0.2
info: {title: Search, version: "1"}
servers: [{url: "https://search.example.com"}]
security: ` + tt.security + `
components:
  securitySchemes:
    appId: {type: apiKey, in: header, name: X-Algolia-Application-Id}
    apiKey: {type: apiKey, in: header, name: X-Algolia-API-Key}
    bearer: {type: http, scheme: bearer}
paths:
  /1/indexes:
    get:
      responses:
        "200":
          content:
            application/json:
              schema: {type: object, properties: {items: {type: array, items: {type: object, properties: {id: {type: string}}}}}}
`
			d, err := parseOpenAPI([]byte(spec), "search.yaml")
			if err != nil {
				t.Fatal(err)
			}
			out, sum, err := BuildOpenAPI(d, OpenAPIOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, lerr := jobfile.LoadResources([]byte(out), "/jobs/search.yaml", func(string) (string, bool) { return "x", true })
			if tt.want == "decide" {
				if lerr == nil || !strings.Contains(lerr.Error(), "source.auth") || strings.Contains(out, "auth: {") ||
					!strings.Contains(strings.Join(sum["decide"].([]string), "\n"), "apiKey") {
					t.Errorf("two schemes together must be a decision naming them: %v\n%s", lerr, out)
				}
				return
			}
			if !strings.Contains(out, tt.want) || lerr != nil {
				t.Errorf("want %s, validating; got %v\n%s", tt.want, lerr, out)
			}
		})
	}
}

// The auth written in defaults is the one every resource needs: an
// operation that needs none (a public list sorted first) does not make
// the file say the description has no security requirement, and
// operations that need different schemes are a decision. Failed first:
// no auth written for /orders, and /a's key written for /b's bearer.
func TestOpenAPIAuthAcrossOperations(t *testing.T) {
	for _, tt := range []struct{ secA, secB, want string }{
		{`[]`, `[{key: []}]`, `auth: {type: api_key, name: X-Key, in: header, value: "${SHOP_API_KEY}"}`},
		{`[{}]`, `[{key: []}]`, `auth: {type: api_key, name: X-Key, in: header, value: "${SHOP_API_KEY}"}`},
		{`[{key: []}]`, `[{bearer: []}]`, "decide"},
	} {
		t.Run(tt.secA+tt.secB, func(t *testing.T) {
			list := `{"200": {content: {application/json: {schema: {type: array, items: {type: object, properties: {id: {type: string}}}}}}}}`
			spec := `openapi: 3.0.2
info: {title: Shop, version: "1"}
servers: [{url: "https://shop.example.com"}]
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Key}
    bearer: {type: http, scheme: bearer}
paths:
  /a_catalog: {get: {security: ` + tt.secA + `, responses: ` + list + `}}
  /b_orders: {get: {security: ` + tt.secB + `, responses: ` + list + `}}
`
			d, err := parseOpenAPI([]byte(spec), "shop.yaml")
			if err != nil {
				t.Fatal(err)
			}
			out, sum, err := BuildOpenAPI(d, OpenAPIOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			_, lerr := jobfile.LoadResources([]byte(out), "/jobs/shop.yaml", func(string) (string, bool) { return "x", true })
			if tt.want == "decide" {
				if lerr == nil || !strings.Contains(strings.Join(sum["decide"].([]string), "\n"), "source.auth") || strings.Contains(out, "auth: {") {
					t.Errorf("different schemes must be a source.auth decision: %v\n%s", lerr, out)
				}
				return
			}
			if !strings.Contains(out, tt.want) || lerr != nil {
				t.Errorf("want %s, validating; got %v\n%s", tt.want, lerr, out)
			}
		})
	}
}
