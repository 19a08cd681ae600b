package jobfile

import (
	"strings"
	"testing"
)

// validate reports every problem of a job file together (docs/job-file.md,
// General rules): an unknown key does not hide the others, nor does a
// value of the wrong type hide an enum or range error (issue 28).
func TestProblemsReportedTogether(t *testing.T) {
	const spec = `name: orders
source:
  url: https://api.example.com/orders
  timout: 5s
pagination:
  style: pages
  size: lots
retry:
  attempts: -1
target:
  url: sqlite:out.db
  table: orders
  key: [id]
  on_bad_record: maybe
`
	_, err := Load([]byte(spec), "", func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"line 4: unknown key source.timout",
		"line 6: pagination.style",
		"line 7: pagination.size",
		"line 9: retry.attempts",
		"line 14: target.on_bad_record",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not report %q:\n%s", want, err)
		}
	}
	if n := strings.Count(err.Error(), "pagination.size"); n != 1 {
		t.Errorf("pagination.size reported %d times, want once:\n%s", n, err)
	}
}

// In a file with several resources, each resource's problems are reported,
// not only the first's, and keys side by side in a flow mapping do not
// take each other's errors.
func TestProblemsOfEveryResource(t *testing.T) {
	const spec = `name: shop
defaults:
  source: {base_url: "https://api.example.com", records: data}
  target: {url: "sqlite:out.db"}
resources:
  - name: orders
    source: {path: /orders, timout: 5s}
    pagination: {style: pages, size: lots}
    target: {table: orders, key: [id]}
  - name: items
    source: {path: /items}
    pagination: {style: page, size_param: per_page, size: -3}
    target: {table: items, key: [id]}
`
	_, err := LoadResources([]byte(spec), "", func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"resource orders: line 7: unknown key source.timout",
		"resource orders: line 8: pagination.style: \"pages\" is not one of",
		"resource orders: line 8: pagination: cannot unmarshal",
		"resource items: line 12: pagination.size",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not report %q:\n%s", want, err)
		}
	}
	if strings.Contains(err.Error(), "source.url") {
		t.Errorf("the unknown key took its mapping with it (source.url reported missing):\n%s", err)
	}
}

// A value a field's own parser refuses (a duration, a byte size, a column
// entry) is one problem among the others: it does not stop the decoding,
// so the keys after it are neither hidden (the style and column type
// errors) nor reported missing (target.url, table, key).
func TestFieldParseErrorHidesNothing(t *testing.T) {
	const spec = `name: b
source:
  url: "http://x/y"
  timeout: notaduration
  max_body: lots
pagination:
  style: pages
target:
  url: "sqlite:o.db"
  table: t
  key: [id]
  columns:
    id: {path: id, type: integr}
    name: {path: name, colour: red}
`
	_, err := Load([]byte(spec), "", func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"line 4: source.timeout: invalid duration",
		"line 5: source.max_body: invalid size",
		"line 7: pagination.style",
		"unknown key target.columns.name.colour",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not report %q:\n%s", want, err)
		}
	}
	for _, false_ := range []string{"target.url: is required", "target.table: is required", "target.key: is required"} {
		if strings.Contains(err.Error(), false_) {
			t.Errorf("a key that is there is reported missing (%q):\n%s", false_, err)
		}
	}
}
