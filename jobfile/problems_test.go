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
