package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// loadOpenAPI parses and validates the served description.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(openapiJSON)
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI 3 description: %v", err)
	}
	return doc
}

// Every route the mux serves is described, and nothing else is.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	var described, served []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			described = append(described, method+" "+path)
		}
	}
	for _, rt := range routeTable {
		served = append(served, rt.method+" "+rt.path)
		item := doc.Paths.Find(rt.path)
		if item == nil || item.GetOperation(rt.method) == nil {
			continue // reported below
		}
		op := item.GetOperation(rt.method)
		if public := op.Security != nil && len(*op.Security) == 0; public != rt.public {
			t.Errorf("%s %s: public %v in openapi.json, %v served", rt.method, rt.path, public, rt.public)
		}
	}
	slices.Sort(described)
	slices.Sort(served)
	if !slices.Equal(described, served) {
		t.Errorf("openapi.json describes\n  %s\nthe server serves\n  %s", strings.Join(described, "\n  "), strings.Join(served, "\n  "))
	}
}

// The replies of every route, errors included, match the description.
func TestOpenAPIMatchesReplies(t *testing.T) {
	doc := loadOpenAPI(t)
	_, url, _ := newTestServer(t, testToken, &recorder{})
	doc.Servers = openapi3.Servers{{URL: url}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/healthz", "", "", 200},
		{"GET", "/openapi.json", testToken, "", 200},
		{"GET", "/openapi.json", "", "", 401},
		{"GET", "/metrics", testToken, "", 200},
		{"GET", "/jobs", testToken, "", 200},
		{"POST", "/jobs/a/run", testToken, `{"max_pages":2}`, 200},
		{"POST", "/jobs/a/run", testToken, `{"max_pages":-2}`, 400},
		{"POST", "/jobs/nope/run", testToken, "", 404},
		{"GET", "/jobs/a/status", testToken, "", 200},
		{"GET", "/jobs/a/status?runs=3", testToken, "", 200},
		{"GET", "/jobs/a/status?runs=-1", testToken, "", 400},
		{"GET", "/jobs/nope/status", testToken, "", 404},
		{"POST", "/keys/claim", testToken, `{"key":"k","owner":"o"}`, 200},
		{"POST", "/keys/claim", testToken, `{"key":"k","token":"t"}`, 400},
		{"POST", "/keys/complete", testToken, `{"key":"k","token":"t","result":{"id":1}}`, 200},
		{"POST", "/keys/fail", testToken, `{"key":"k","token":"t","permanent":true}`, 200},
		{"POST", "/keys/heartbeat", testToken, `{"key":"k","token":"t"}`, 200},
		{"GET", "/keys/get?key=k", testToken, "", 200},
		{"POST", "/jobs/a/changes", testToken, `{"consumer":"c","ops":["I"],"limit":10,"lease":"1m"}`, 200},
		{"POST", "/jobs/a/changes", testToken, `{"consumer":"c","batch":"b1"}`, 400},
		{"POST", "/jobs/a/changes/ack", testToken, `{"consumer":"c","batch":"b1","through":2}`, 200},
		{"POST", "/jobs/nope/changes/ack", testToken, `{"consumer":"c","batch":"b1"}`, 404},
		{"GET", "/jobs/a/changes/status", testToken, "", 200},
	} {
		req, _ := http.NewRequest(c.method, url+c.path, strings.NewReader(c.body))
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d: %s", c.method, c.path, resp.StatusCode, c.want, body)
			continue
		}
		vreq, _ := http.NewRequest(c.method, url+c.path, strings.NewReader(c.body))
		vreq.Header = req.Header
		route, params, err := router.FindRoute(vreq)
		if err != nil {
			t.Errorf("%s %s: not in openapi.json: %v", c.method, c.path, err)
			continue
		}
		in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode,
			Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body))}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s %s: reply %d does not match openapi.json: %v\n%s", c.method, c.path, resp.StatusCode, err, body)
		}
	}
}
