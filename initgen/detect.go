package initgen

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	idsync "github.com/idemsync/idemsync/sync"
)

// Page is the one response init reads: the URL asked, its headers
// and its JSON body.
type Page struct {
	url    *url.URL
	header http.Header
	body   gjson.Result
}

// setting is one key of the generated pagination block, with an optional
// comment ("check: …") printed after it.
type setting struct{ key, value, note string }

// pagination is the detected pagination: its style, its keys in the order
// they are written, why it was chosen, and the query parameters the
// engine sets itself (removed from source.url).
type pagination struct {
	style    string
	settings []setting
	why      string
	owned    []string
}

func (p *pagination) set(key, value, note string) {
	p.settings = append(p.settings, setting{key, value, note})
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
func escapePath(k string) string {
	var b strings.Builder
	for _, r := range k {
		if strings.ContainsRune(`.*?|#@\!=<>%,:"()[]{}`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// field is a scalar found in the body: its GJSON path and value.
type field struct {
	path string
	val  gjson.Result
}

// signalHolders are the objects where APIs put paging information.
var signalHolders = []string{"", "meta", "pagination", "paging", "page_info", "pageInfo", "links", "_links", "cursor", "cursors", "paging.cursors", "response_metadata", "metadata"}

// findField returns the first field (top level first, then the usual
// holders) whose normalised key is one of names and whose value kind is ok.
func findField(body gjson.Result, names []string, ok func(gjson.Result) bool) (field, bool) {
	for _, holder := range signalHolders {
		obj := body
		prefix := ""
		if holder != "" {
			obj = body.Get(holder)
			prefix = holder + "."
		}
		if !obj.IsObject() {
			continue
		}
		var hit field
		found := false
		obj.ForEach(func(k, v gjson.Result) bool {
			n := normKey(k.String())
			for _, want := range names {
				if n == want && ok(v) {
					hit, found = field{prefix + escapePath(k.String()), v}, true
					return false
				}
			}
			return true
		})
		if found {
			return hit, true
		}
	}
	return field{}, false
}

// normKey lowercases a key and drops everything but letters and digits.
func normKey(k string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(k) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isNumber(v gjson.Result) bool { return v.Type == gjson.Number }
func isBool(v gjson.Result) bool   { return v.Type == gjson.True || v.Type == gjson.False }
func isText(v gjson.Result) bool   { return v.Type == gjson.String && v.String() != "" }
func isURL(v gjson.Result) bool {
	s := v.String()
	return v.Type == gjson.String && (strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "?"))
}
func isCursor(v gjson.Result) bool { return isText(v) && !isURL(v) }

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
// page size, and reports whether it did.
func (p *Page) sizeParam(pg *pagination, names ...string) bool {
	k, v, ok := p.queryParam(names...)
	if !ok {
		return false
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		pg.set("size_param", k, "")
		pg.set("size", v, "")
		pg.owned = append(pg.owned, k)
		return true
	}
	return false
}

// detectPagination picks the pagination style from the first page's
// signals, strongest first: a Link header, a next-cursor header, a next
// URL or a next cursor in the body, a has_more flag with record ids
// (Stripe), page numbers, offsets, a since-style query parameter (hwm);
// none when there is no signal.
func detectPagination(p *Page, records string, recs []gjson.Result) *pagination {
	pg := &pagination{}
	sizes := []string{"per_page", "limit", "page_size", "pageSize", "size", "count", "maxResults", "max_results", "top"}
	switch {
	case linkNext.MatchString(strings.Join(p.header.Values("Link"), ",")):
		pg.style, pg.why = idsync.StyleLink, `the response has a Link header with rel="next"`
		p.sizeParam(pg, sizes...)
		return pg
	}
	for k := range p.header {
		if n := normKey(k); strings.Contains(n, "nextcursor") || strings.Contains(n, "nextpagetoken") || n == "xnexttoken" {
			pg.style, pg.why = idsync.StyleCursor, "the response has a "+k+" header"
			pg.set("param", "cursor", "check: the query parameter the API reads the cursor from")
			pg.set("next_header", k, "")
			pg.owned = append(pg.owned, "cursor")
			p.sizeParam(pg, sizes...)
			return pg
		}
	}
	if f, ok := findField(p.body, []string{"next", "nexturl", "nextlink", "nextpageurl", "odatanextlink", "nextpage", "nexthref"}, isURL); ok {
		pg.style, pg.why = idsync.StyleCursor, "the body holds the next page's URL at "+f.path
		pg.set("next_url", f.path, "")
		p.sizeParam(pg, sizes...)
		return pg
	}
	if f, ok := findField(p.body, []string{"next", "nexthref"}, func(v gjson.Result) bool { return isURL(v.Get("href")) }); ok {
		pg.style, pg.why = idsync.StyleCursor, "the body holds the next page's URL at "+f.path+".href"
		pg.set("next_url", f.path+".href", "")
		p.sizeParam(pg, sizes...)
		return pg
	}
	if f, ok := findField(p.body, []string{"nextcursor", "nextpagetoken", "nexttoken", "endcursor", "after", "cursor", "next"}, isCursor); ok {
		param := cursorParam(f.path)
		pg.style, pg.why = idsync.StyleCursor, "the body holds the next cursor at "+f.path
		pg.set("param", param, "check: the query parameter the API reads the cursor from")
		pg.set("next", f.path, "")
		pg.owned = append(pg.owned, param)
		p.sizeParam(pg, sizes...)
		return pg
	}
	more, hasMore := findField(p.body, []string{"hasmore", "hasnextpage", "more", "hasnext"}, isBool)
	page, hasPage := findField(p.body, []string{"page", "currentpage", "pagenumber", "pagenum"}, isNumber)
	if qk, _, ok := p.queryParam("page", "page_number", "pageNumber"); ok && !hasPage {
		page, hasPage = field{path: qk}, true
	}
	if hasMore && !hasPage && records != "" && allHave(recs, "id") {
		pg.style, pg.why = idsync.StyleCursor, "the body has "+more.path+" and no page number: the next page starts after the last record's id (Stripe's lists)"
		pg.set("param", "starting_after", "check: the query parameter taking the last id seen")
		pg.set("next", records+".@reverse.0.id", "the id of the page's last record")
		pg.set("has_more", more.path, "")
		pg.owned = append(pg.owned, "starting_after")
		p.sizeParam(pg, sizes...)
		return pg
	}
	if hasPage {
		detectPages(p, pg, page, more, hasMore, sizes)
		return pg
	}
	if detectOffset(p, pg, len(recs), sizes) {
		return pg
	}
	if detectHWM(p, pg, recs, sizes) {
		return pg
	}
	pg.style = idsync.StyleNone
	pg.why = "no pagination signal on the first page (no Link header, next URL or cursor, page number, offset or since parameter): the whole list is one request"
	return pg
}

// cursorParam guesses the query parameter a cursor found at path is sent
// back in: next_cursor → cursor, nextPageToken → pageToken.
func cursorParam(path string) string {
	k := path[strings.LastIndexByte(path, '.')+1:]
	for _, pre := range []string{"next_", "next", "Next"} {
		if rest, ok := strings.CutPrefix(k, pre); ok && rest != "" {
			return strings.ToLower(rest[:1]) + rest[1:]
		}
	}
	if normKey(k) == "endcursor" {
		return "after"
	}
	return "cursor"
}

// allHave reports whether every record has a scalar at key.
func allHave(recs []gjson.Result, key string) bool {
	for _, r := range recs {
		if v := r.Get(escapePath(key)); !v.Exists() || v.IsObject() || v.IsArray() || v.Type == gjson.Null {
			return false
		}
	}
	return len(recs) > 0
}

// detectPages fills in the page style from a page number in the body or
// the query, a total page count or has_more flag, and a page size.
func detectPages(p *Page, pg *pagination, page, more field, hasMore bool, sizes []string) {
	pg.style = idsync.StylePage
	param := page.path[strings.LastIndexByte(page.path, '.')+1:]
	if qk, _, ok := p.queryParam("page", "page_number", "pageNumber", param); ok {
		param = qk
	}
	pg.why = "the page is numbered (" + page.path + ")"
	note := ""
	if _, _, ok := p.queryParam(param); !ok && param != "page" {
		note = "check: the query parameter taking the page number"
	}
	pg.set("param", param, note)
	pg.owned = append(pg.owned, param)
	if page.val.Exists() && page.val.Int() == 0 {
		pg.set("start", "0", "the first page is number 0")
	}
	if !p.sizeParam(pg, sizes...) {
		bodySize(p, pg)
	}
	if f, ok := findField(p.body, []string{"totalpages", "lastpage", "pagecount", "pages", "numpages"}, isNumber); ok {
		pg.set("total_pages", f.path, "")
		pg.why += "; the body tells the number of pages"
	} else if hasMore {
		pg.set("has_more", more.path, "")
	}
}

// detectOffset fills in the offset style from an offset in the body or
// the query; it reports false when there is none.
func detectOffset(p *Page, pg *pagination, n int, sizes []string) bool {
	names := []string{"offset", "skip", "startat", "start"}
	param, _, inQuery := p.queryParam("offset", "skip", "startAt", "start")
	f, inBody := findField(p.body, names, isNumber)
	if !inQuery && !inBody {
		return false
	}
	if !inQuery {
		param = f.path[strings.LastIndexByte(f.path, '.')+1:]
	}
	pg.style, pg.why = idsync.StyleOffset, "the request or the body carries an offset ("+param+")"
	pg.set("param", param, "")
	pg.owned = append(pg.owned, param)
	if !p.sizeParam(pg, sizes...) && !bodySize(p, pg) {
		pg.set("size_param", "limit", "check: the query parameter taking the page size")
		pg.set("size", strconv.Itoa(max(n, 1)), "the records on the first page")
		pg.owned = append(pg.owned, "limit")
	}
	if t, ok := findField(p.body, []string{"total", "totalcount", "totalresults", "totalrecords", "count"}, isNumber); ok {
		pg.set("total", t.path, "")
	}
	return true
}

// detectHWM fills in the hwm style when the URL's query filters by a
// change time (since=…) and the records carry one; false otherwise.
func detectHWM(p *Page, pg *pagination, recs []gjson.Result, sizes []string) bool {
	param, _, ok := p.queryParam("since", "updated_since", "updated_after", "modified_since", "changed_since", "updatedSince", "updatedAfter")
	if !ok {
		return false
	}
	mark := ""
	for _, k := range []string{"updated_at", "updatedAt", "modified_at", "modifiedAt", "last_modified", "lastModified", "updated", "modified"} {
		if allHave(recs, k) {
			mark = k
			break
		}
	}
	if mark == "" {
		return false
	}
	pg.style, pg.why = idsync.StyleHWM, "the request filters by "+param+" and the records carry "+mark
	pg.set("field", escapePath(mark), "")
	pg.set("param", param, "")
	pg.owned = append(pg.owned, param)
	if !p.sizeParam(pg, sizes...) {
		pg.set("size_param", "limit", "check: the query parameter taking the page size")
		pg.set("size", strconv.Itoa(max(len(recs), 1)), "the records on the first page")
		pg.owned = append(pg.owned, "limit")
	}
	return true
}

// bodySize sets size_param and size from a page size the body reports
// (per_page, page_size, limit, maxResults), and reports whether it did.
func bodySize(p *Page, pg *pagination) bool {
	f, ok := findField(p.body, []string{"perpage", "pagesize", "limit", "size", "maxresults"}, isNumber)
	if !ok || f.val.Int() <= 0 {
		return false
	}
	k := f.path[strings.LastIndexByte(f.path, '.')+1:]
	pg.set("size_param", k, "check: the query parameter taking the page size")
	pg.set("size", fmt.Sprint(f.val.Int()), "")
	pg.owned = append(pg.owned, k)
	return true
}
