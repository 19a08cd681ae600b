package jobfile

import (
	"strings"
	"testing"
)

const shopSpec = `
name: shop
defaults:
  source:
    base_url: https://api.example.com/v1/
    headers: {Authorization: "Bearer ${SHOP_TOKEN}", X-Shop: eu, X-Literal: "$${SHOP_TOKEN}"}
  retry: {attempts: 6}
  target: {url: "sqlite:out/shop.db", on_bad_record: skip}
resources:
  - name: orders
    source: {path: /orders, records: data}
    pagination: {style: page, size: 100, size_param: per_page}
    target: {table: orders, key: [id]}
  - name: customers
    source: {path: customers, headers: {X-Shop: us}}
    retry: {attempts: 2}
    target: {table: customers, key: [id]}
`

func TestLoadResourcesMergesDefaults(t *testing.T) {
	rs, err := LoadResources([]byte(shopSpec), "/jobs/shop.yaml", env(map[string]string{"SHOP_TOKEN": "tok-123"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Name != "orders" || rs[1].Name != "customers" {
		t.Fatalf("resources = %+v, want orders then customers", rs)
	}
	o, c := rs[0].Job, rs[1].Job
	if o.Name != "shop.orders" || c.Name != "shop.customers" {
		t.Errorf("state names = %q, %q; want shop.orders, shop.customers", o.Name, c.Name)
	}
	if o.Source.URL != "https://api.example.com/v1/orders" || c.Source.URL != "https://api.example.com/v1/customers" {
		t.Errorf("urls = %q, %q", o.Source.URL, c.Source.URL)
	}
	if o.Source.Headers["Authorization"] != "Bearer tok-123" || c.Source.Headers["Authorization"] != "Bearer tok-123" {
		t.Errorf("merged auth headers = %q, %q", o.Source.Headers["Authorization"], c.Source.Headers["Authorization"])
	}
	if o.Source.Headers["X-Shop"] != "eu" || c.Source.Headers["X-Shop"] != "us" {
		t.Errorf("X-Shop = %q, %q; want the resource's own value to win", o.Source.Headers["X-Shop"], c.Source.Headers["X-Shop"])
	}
	if o.Retry.Attempts != 6 || c.Retry.Attempts != 2 {
		t.Errorf("attempts = %d, %d; want 6 (defaults), 2 (own)", o.Retry.Attempts, c.Retry.Attempts)
	}
	if o.Target.Table != "orders" || c.Target.Table != "customers" || string(c.Target.OnBadRecord) != "skip" {
		t.Errorf("targets = %+v / %+v", o.Target, c.Target)
	}
	for _, r := range rs {
		if got := r.Job.Source.Headers["X-Literal"]; got != "${SHOP_TOKEN}" {
			t.Errorf("resource %s: X-Literal = %q; want ${SHOP_TOKEN} (defaults expanded once per resource, never twice)", r.Name, got)
		}
		if got := r.Job.Secrets.Redact("x tok-123 y"); strings.Contains(got, "tok-123") {
			t.Errorf("resource %s does not redact the shared secret: %q", r.Name, got)
		}
	}
}

func TestLoadResourcesV1IsOneResource(t *testing.T) {
	rs, err := LoadResources([]byte(validSpec), "/jobs/orders.yaml", env(map[string]string{"API_TOKEN": "t"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Name != "orders" || rs[0].Job.Name != "orders" {
		t.Fatalf("v1 file = %+v; want one resource orders whose state keeps the name orders", rs)
	}
}

func TestLoadResourcesProblems(t *testing.T) {
	cases := map[string]struct{ spec, want string }{
		"duplicate name": {`
name: shop
resources:
  - {name: a, source: {url: "https://x/a"}, target: {url: "sqlite:x.db", table: a, key: [id]}}
  - {name: a, source: {url: "https://x/b"}, target: {url: "sqlite:x.db", table: b, key: [id]}}
`, `resources[1]: name "a" is also resources[0]`},
		"bad name": {`
name: shop
resources:
  - {name: "a.b", source: {url: "https://x/a"}, target: {url: "sqlite:x.db", table: a, key: [id]}}
`, `name "a.b" may only contain`},
		"fan-out key not a value": {`
name: shop
resources:
  - {name: a, source: {url: "https://x/a"}, target: {url: "sqlite:x.db", table: a, key: [id]}}
  - {name: b, parent: [a], source: {url: "https://x/b"}, target: {url: "sqlite:x.db", table: b, key: [id]}}
`, `line 5: resource b: parent: a single value`},
		"state under defaults": {`
name: shop
defaults: {state: elsewhere.db}
resources:
  - {name: a, source: {url: "https://x/a"}, target: {url: "sqlite:x.db", table: a, key: [id]}}
`, `line 3: defaults.state: state belongs at the top level of the file`},
		"name under defaults": {`
name: shop
defaults: {name: other}
resources:
  - {name: a, source: {url: "https://x/a"}, target: {url: "sqlite:x.db", table: a, key: [id]}}
`, `defaults.name: name belongs at the top level of the file`},
		"retention in a resource": {`
name: shop
resources:
  - {name: a, retention: 7d, source: {url: "https://x/a"}, target: {url: "sqlite:x.db", table: a, key: [id]}}
`, `resource a: retention: retention belongs at the top level of the file`},
		"url and base_url": {`
name: shop
defaults: {source: {base_url: "https://x"}}
resources:
  - {name: a, source: {url: "https://x/a", path: /a}, target: {url: "sqlite:x.db", table: a, key: [id]}}
`, `give either source.url or source.base_url`},
		"path without base_url": {`
name: shop
resources:
  - {name: a, source: {path: /a}, target: {url: "sqlite:x.db", table: a, key: [id]}}
`, `base_url and path go together`},
		"resource problem named": {`
name: shop
resources:
  - {name: a, source: {url: "https://x/a"}, target: {url: "sqlite:x.db", table: a}}
`, `resource a: `},
		"one SQLite table in two cases": {`
name: shop
resources:
  - {name: a, source: {url: "https://x/a"}, target: {url: "sqlite:x.db", table: Orders, key: [id], deletes: hard}}
  - {name: b, source: {url: "https://x/b"}, target: {url: "sqlite:x.db", table: oRDERS, key: [id]}}
`, `resources a and b both write table oRDERS`},
		"top-level source": {`
name: shop
source: {url: "https://x"}
resources:
  - {name: a, target: {url: "sqlite:x.db", table: a, key: [id]}}
`, `a file with resources: has no top-level source`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadResources([]byte(c.spec), "/jobs/shop.yaml", env(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want it to contain %q", err, c.want)
			}
		})
	}
}

func TestLoadRefusesResourcesFile(t *testing.T) {
	_, err := Load([]byte(shopSpec), "/jobs/shop.yaml", env(map[string]string{"SHOP_TOKEN": "t"}))
	if err == nil || !strings.Contains(err.Error(), "loaded by LoadResources") {
		t.Fatalf("err = %v; want the single-job loader to refuse a resources file clearly", err)
	}
}
