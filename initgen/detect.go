package initgen

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/pagesignal"
)

// Page is the one response init reads: the URL asked, its headers
// and its JSON body.
type Page struct {
	url    *url.URL
	header http.Header
	body   gjson.Result
}

// findRecords returns the GJSON path of the largest array of objects in
// body ("" for a top-level array) and the array, searching objects up to
// four levels deep. A tie goes to the shallower, then the earlier, array.
func findRecords(body gjson.Result) (string, gjson.Result, bool) {
	if body.IsArray() {
		return "", body, objectArray(body)
	}
	var bestPath string
	var best gjson.Result
	found := false
	var walk func(obj gjson.Result, prefix string, depth int)
	walk = func(obj gjson.Result, prefix string, depth int) {
		obj.ForEach(func(k, v gjson.Result) bool {
			path := prefix + escapePath(k.String())
			switch {
			case v.IsArray() && objectArray(v):
				if n := len(v.Array()); !found || n > len(best.Array()) ||
					n == len(best.Array()) && strings.Count(path, ".") < strings.Count(bestPath, ".") {
					bestPath, best, found = path, v, true
				}
			case v.IsObject() && depth < 4:
				walk(v, path+".", depth+1)
			}
			return true
		})
	}
	walk(body, "", 1)
	return bestPath, best, found
}

// objectArray reports whether a is a non-empty array of mostly objects.
func objectArray(a gjson.Result) bool {
	els := a.Array()
	objs := 0
	for _, e := range els {
		if e.IsObject() {
			objs++
		}
	}
	return len(els) > 0 && objs*2 > len(els)
}

// escapePath escapes a key for use in a GJSON path.
var escapePath = pagesignal.EscapePath

var linkNext = regexp.MustCompile(`<[^>]*>\s*;[^,]*\brel="?[^",]*\bnext\b`)

// queryParam returns the first of names present in the page's URL query.
func (p *Page) queryParam(names ...string) (string, string, bool) {
	q := p.url.Query()
	for _, n := range names {
		for k := range q {
			if normKey(k) == normKey(n) {
				return k, q.Get(k), true
			}
		}
	}
	return "", "", false
}

// sizeParam sets size_param and size from the URL's query when it names a
// page size (pagesignal.SizeParams), and reports whether it did.
func (p *Page) sizeParam(pg *pagination) bool {
	k, n, ok := pagesignal.SizeParam(p.url.Query())
	if !ok {
		return false
	}
	pg.set("size_param", k, "")
	pg.set("size", strconv.Itoa(n), "")
	pg.owned = append(pg.owned, k)
	return true
}

// normKey lowercases a key and drops everything but letters and digits.
var normKey = pagesignal.Norm
