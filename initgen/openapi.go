package initgen

import (
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/pagesignal"
	"github.com/idemsync/idemsync/sync/paging"
)

// OpenAPIOptions choose the list operations init --openapi writes.
type OpenAPIOptions struct {
	Path string // only the list operation at this path, with the parents it fans out from
	All  bool   // every list operation
	Name string // the file's name; default from the description's title
}

// listOp is one list operation of the description: a GET whose success
// response is an array of objects, directly or under a property.
type listOp struct {
	path, summary string
	records       string         // the property holding the array; "" for the body itself
	body, item    map[string]any // the response schema and its item schema
	params        map[string]map[string]any
	linkHeader    bool // the response declares a Link header
	security      []any
	name, style   string
	parent        *listOp
	parentParam   map[string]string // path parameter → parent property
	columns       map[string]string // property → the column written for it
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// listOps returns the description's list operations, by path.
func (d *apiDoc) listOps() []*listOp {
	paths := mapOf(d.root["paths"])
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	var out []*listOp
	for _, p := range keys {
		d.at = p
		item := d.obj(paths[p])
		get := d.obj(item["get"])
		if get == nil {
			continue
		}
		resp := d.success(get)
		if resp == nil {
			continue
		}
		op := &listOp{path: p, summary: str(get["summary"]), params: map[string]map[string]any{}}
		for _, src := range [][]any{list(item["parameters"]), list(get["parameters"])} {
			for _, raw := range src {
				if prm := d.obj(raw); prm != nil {
					op.params[str(prm["in"])+":"+str(prm["name"])] = prm
				}
			}
		}
		for h := range mapOf(resp["headers"]) {
			if strings.EqualFold(h, "link") {
				op.linkHeader = true
			}
		}
		op.security = list(d.root["security"])
		if s, ok := get["security"].([]any); ok {
			op.security = s
		}
		var schema map[string]any
		content := mapOf(resp["content"])
		cts := make([]string, 0, len(content))
		for ct := range content {
			cts = append(cts, ct)
		}
		sort.Strings(cts) // application/json before its variants
		for _, ct := range cts {
			if strings.Contains(ct, "json") && schema == nil {
				schema = d.obj(mapOf(content[ct])["schema"])
			}
		}
		if d.recordsOf(op, schema) {
			out = append(out, op)
		}
	}
	return out
}

// success is an operation's 200 (else first 2xx) response.
func (d *apiDoc) success(op map[string]any) map[string]any {
	rs := mapOf(op["responses"])
	if r := d.obj(rs["200"]); r != nil {
		return r
	}
	for _, code := range []string{"2XX", "201", "203", "206"} {
		if r := d.obj(rs[code]); r != nil {
			return r
		}
	}
	return nil
}

// recordsOf finds the records of a response schema: the body itself when
// it is an array of objects, else its array-of-objects property (data,
// items, results, value first).
func (d *apiDoc) recordsOf(op *listOp, schema map[string]any) bool {
	if schema == nil {
		return false
	}
	op.body = schema
	if it := d.itemsOf(schema); it != nil {
		if d.typeOf(it) == "object" || len(d.props(it)) > 0 {
			op.item = it
			return true
		}
		return false
	}
	props := d.props(schema)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := recordsRank(names[i]), recordsRank(names[j])
		return ri < rj || ri == rj && names[i] < names[j]
	})
	for _, k := range names {
		if it := d.itemsOf(props[k]); it != nil && (d.typeOf(it) == "object" || len(d.props(it)) > 0) {
			op.records, op.item = escapePath(k), it
			return true
		}
	}
	return false
}

func recordsRank(k string) int {
	if i := slices.Index([]string{"data", "items", "results", "value", "records", "entries"}, k); i >= 0 {
		return i
	}
	return 99
}

// query returns the operation's query parameter whose normalised name is
// one of names.
func (op *listOp) query(names ...string) (string, map[string]any, bool) {
	for _, n := range names {
		for k, p := range op.params {
			if strings.HasPrefix(k, "query:") && normKey(k[len("query:"):]) == normKey(n) {
				return k[len("query:"):], p, true
			}
		}
	}
	return "", nil, false
}

// pathParams are the path's parameters, in order.
func (op *listOp) pathParams() []string {
	var out []string
	for _, m := range pathParam.FindAllStringSubmatch(op.path, -1) {
		out = append(out, m[1])
	}
	return out
}

// pageSize is the size to ask for with size parameter p: its maximum
// (up to 1000), else its default; 0 when the description says neither.
func pageSize(p map[string]any) int {
	s := mapOf(p["schema"])
	if m, ok := number(s["maximum"]); ok && m > 0 && m <= 1000 {
		return m
	}
	if v, ok := number(s["default"]); ok && v > 0 {
		return v
	}
	return 0
}

// number reads a whole number decoded from JSON (float64) or YAML (int).
func number(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		return int(n), n == float64(int(n))
	case int:
		return n, true
	}
	return 0, false
}

// openAPIPagination reads an operation's pagination from its parameters
// and response schema: a declared Link header (link), starting_after with
// has_more (Stripe's cursor), a cursor or token parameter with the
// response field that carries the next one (cursor), page numbers
// (page), offsets (offset), a next URL in the response (cursor). A
// position parameter whose counterpart it cannot find, or a response
// that speaks of more pages without a parameter to ask for them, is a
// decision left open.
func (d *apiDoc) openAPIPagination(op *listOp) *pagination {
	pg := &pagination{}
	sizeName, sizeP, hasSize := op.query(pagesignal.SizeParams...)
	withSize := func() {
		if !hasSize {
			return
		}
		pg.set("size_param", sizeName, "")
		if n := pageSize(sizeP); n > 0 {
			pg.set("size", strconv.Itoa(n), "")
		}
	}
	top := d.props(op.body)
	hasMore := ""
	for k, s := range top {
		if pagesignal.HasMore(normKey(k)) && d.typeOf(s) == "boolean" {
			hasMore = escapePath(k)
		}
	}
	nextField := func(url bool) string {
		for _, holder := range append([]string{""}, pagesignal.Holders...) {
			props := top
			if holder != "" {
				h, ok := top[holder]
				if !ok {
					continue
				}
				props = d.props(h)
			}
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				s := props[k]
				if !pagesignal.IsNext(normKey(k)) || d.typeOf(s) != "string" {
					continue
				}
				isURL := str(s["format"]) == "uri" || strings.Contains(normKey(k), "url") || strings.Contains(normKey(k), "link") || normKey(k) == "next"
				if isURL == url {
					p := escapePath(k)
					if holder != "" {
						p = holder + "." + p
					}
					return p
				}
			}
		}
		return ""
	}
	switch {
	case op.linkHeader:
		pg.style, pg.why = paging.StyleLink, "the response declares a Link header"
		withSize()
	case op.records != "" && hasMore != "" && has(op, "starting_after") && d.props(op.item)["id"] != nil:
		pg.style, pg.why = paging.StyleCursor, "the operation takes starting_after and the response has "+hasMore+" (Stripe's lists)"
		pg.set("param", "starting_after", "")
		pg.set("next", op.records+".@reverse.0.id", "the id of the page's last record")
		pg.set("has_more", hasMore, "")
		withSize()
	case hasAny(op, "cursor", "page_token", "pageToken", "after", "continuation", "next_token", "nextToken", "marker", "continue"):
		param, _, _ := op.query("cursor", "page_token", "pageToken", "after", "continuation", "next_token", "nextToken", "marker", "continue")
		pg.style, pg.why = paging.StyleCursor, "the operation takes "+param
		if next := nextField(false); next != "" {
			pg.set("param", param, "")
			pg.set("next", next, "")
		} else if next := nextField(true); next != "" {
			pg.set("next_url", next, "")
		} else {
			pg.set("param", param, "")
			pg.leave("next", "", "which response field holds the next "+param+"? The response schema names none")
		}
		withSize()
	case hasAny(op, "page", "page_number", "pageNumber") && d.pageToken(op) && nextField(false) != "":
		// A page parameter that is text, with a next field in the response,
		// takes a token: Stripe's search lists (page, next_page).
		param, _, _ := op.query("page", "page_number", "pageNumber")
		pg.style, pg.why = paging.StyleCursor, "the operation takes "+param+", a text, and the response has "+nextField(false)
		pg.set("param", param, "")
		pg.set("next", nextField(false), "")
		if hasMore != "" {
			pg.set("has_more", hasMore, "")
		}
		withSize()
	case hasAny(op, "page", "page_number", "pageNumber"):
		param, p, _ := op.query("page", "page_number", "pageNumber")
		pg.style, pg.why = paging.StylePage, "the operation takes "+param
		pg.set("param", param, "")
		if v, ok := number(mapOf(p["schema"])["minimum"]); ok && v == 0 {
			pg.set("start", "0", "")
		}
		withSize()
		if hasMore != "" {
			pg.set("has_more", hasMore, "")
		}
	case hasAny(op, "offset", "skip", "start", "startAt"):
		param, _, _ := op.query("offset", "skip", "start", "startAt")
		pg.style, pg.why = paging.StyleOffset, "the operation takes "+param
		pg.set("param", param, "")
		if !hasSize {
			pg.leave("size_param", "", "which query parameter takes the page size (the operation names none), and pagination.size?")
		} else if pageSize(sizeP) == 0 {
			pg.set("size_param", sizeName, "")
			pg.leave("size", "", "how many records a page holds (the description gives no maximum or default for "+sizeName+")")
		} else {
			withSize()
		}
	case nextField(true) != "":
		pg.style, pg.why = paging.StyleCursor, "the response has the next page's URL"
		pg.set("next_url", nextField(true), "")
		withSize()
	case hasMore != "" || nextField(false) != "" || hasSize:
		pg.style = paging.StyleNone
		pg.why = "the operation pages (" + strings.Trim(strings.Join([]string{hasMore, nextField(false), sizeName}, " "), " ") + ") but names no parameter for the next page's position"
		pg.decide = append(pg.decide, "pagination.style: "+pg.why+": choose the style and its keys (docs/pagination.md)")
	default:
		pg.style, pg.why = paging.StyleNone, "the operation has no paging parameter and its response no paging field: one request"
	}
	return pg
}

// pageToken reports whether the operation's page parameter is a string: a
// token to send back, not a number to count up.
func (d *apiDoc) pageToken(op *listOp) bool {
	_, p, ok := op.query("page", "page_number", "pageNumber")
	return ok && d.typeOf(d.obj(p["schema"])) == "string"
}

func has(op *listOp, name string) bool { _, _, ok := op.query(name); return ok }

func hasAny(op *listOp, names ...string) bool { _, _, ok := op.query(names...); return ok }

// columnType maps a property's schema to a column type.
func (d *apiDoc) columnType(s map[string]any) string {
	switch d.typeOf(s) {
	case "integer":
		return string(contract.TypeInteger)
	case "number":
		return string(contract.TypeNumeric)
	case "boolean":
		return string(contract.TypeBoolean)
	case "string":
		if f := str(s["format"]); f == "date-time" {
			return string(contract.TypeTimestamp)
		}
		return string(contract.TypeText)
	}
	return string(contract.TypeJSON)
}

// opName is a resource name for an operation: its path's segments
// without parameters and versions, joined by _.
func opName(path string) string {
	var parts []string
	for _, s := range strings.Split(strings.Trim(path, "/"), "/") {
		if s == "" || strings.HasPrefix(s, "{") || len(s) <= 3 && s[0] == 'v' && strings.Trim(s[1:], "0123456789") == "" {
			continue
		}
		if n := strings.ReplaceAll(cleanName(s), "-", "_"); n != "" { // " ", "%": no name
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "items"
	}
	return strings.Join(parts, "_")
}

// singular drops a plural's s: customers → customer.
func singular(s string) string {
	if strings.HasSuffix(s, "ies") {
		return s[:len(s)-3] + "y"
	}
	return strings.TrimSuffix(s, "s")
}

// linkParents finds each operation's parent: the list operation at the
// longest path that, followed by /{param}, starts the operation's path;
// the parameter is the parent's id when it is named after the parent
// (customers/{customer}, pets/{petId}, {id}) and the parent's records
// have an id, else the parent's property of the parameter's own name.
func (d *apiDoc) linkParents(ops []*listOp) {
	for _, op := range ops {
		for _, cand := range ops {
			if cand == op || !strings.HasPrefix(op.path, cand.path+"/{") || (op.parent != nil && len(op.parent.path) >= len(cand.path)) {
				continue
			}
			rest := op.path[len(cand.path)+2:]
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				continue // "/a/{b": no parameter, so no fan-out
			}
			param := rest[:end]
			last := cand.path[strings.LastIndexByte(cand.path, '/')+1:]
			d.at = cand.path
			props := d.props(cand.item)
			col := ""
			switch n := normKey(param); {
			case (n == "id" || n == normKey(singular(last)) || n == normKey(singular(last))+"id") && props["id"] != nil:
				col = "id"
			case props[param] != nil:
				col = param
			}
			if col != "" {
				op.parent, op.parentParam = cand, map[string]string{param: col}
			}
		}
	}
}
