package httpsource

import (
	"bytes"
	"fmt"
	"mime"
	"strings"

	"github.com/tidwall/gjson"
)

// notJSON reports whether an invalid 2xx body is not JSON at all (an HTML
// login or error page: permanent) rather than JSON cut short (transient):
// its first non-space byte cannot start a JSON value, or it says it is
// HTML. An empty body counts as cut short.
func notJSON(body []byte, contentType string) bool {
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "text/html" || mt == "application/xhtml+xml" {
		return true
	}
	b := bytes.TrimLeft(body, " \t\r\n\ufeff") // and a byte order mark
	if len(b) == 0 {
		return false
	}
	switch c := b[0]; {
	case c == '{', c == '[', c == '"', c == '-', c >= '0' && c <= '9':
		return false
	case c == 't', c == 'f', c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if k := min(len(b), len(lit)); string(b[:k]) == lit[:k] {
				return false // the literal, or its start cut short
			}
		}
	}
	return true
}

// rawCount is how many elements the array the API returned holds: the
// records themselves when source.records is a plain path, else the array
// at the longest plain-key prefix of the path (the page of posts of
// "#.comments|@flatten", the data of "data.#(active==true)#"). When that
// prefix is not an array, the records are counted.
func (f *Fetcher) rawCount(body []byte, recs []gjson.Result) int {
	prefix, plain := plainPrefix(f.cfg.Source.Records)
	if plain {
		return len(recs)
	}
	v := gjson.ParseBytes(body)
	if prefix != "" {
		v = v.Get(prefix)
	}
	if !v.IsArray() {
		return len(recs)
	}
	n := 0
	v.ForEach(func(_, _ gjson.Result) bool {
		n++
		return true
	})
	return n
}

// plainPrefix splits a GJSON path at its first component that is not a
// plain key (a wildcard, a # query or count, a @modifier, a | pipe, a
// multipath): it returns the plain components before it, joined as a path,
// and whether the whole path was plain.
func plainPrefix(path string) (prefix string, plain bool) {
	var comps []string
	var cur strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c == '\\' && i+1 < len(path):
			cur.WriteByte(c)
			cur.WriteByte(path[i+1])
			i++
		case c == '.':
			comps = append(comps, cur.String())
			cur.Reset()
		case c == '|':
			comps = append(comps, cur.String())
			return strings.Join(comps, "."), false
		case strings.IndexByte("*?#@!=<>%()[]{},", c) >= 0:
			return strings.Join(comps, "."), false
		default:
			cur.WriteByte(c)
		}
	}
	return path, true
}

// MaxJSONDepth is the deepest nesting of arrays and objects a response body
// may have, the same limit as encoding/json's. A deeper body is a permanent
// error rather than a stack overflow.
const MaxJSONDepth = 10000

// jsonDepthExceeds reports whether data nests arrays and objects more than
// limit levels deep, ignoring brackets inside strings. It does not validate.
func jsonDepthExceeds(data []byte, limit int) bool {
	depth, inStr := 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			depth++
			if depth > limit {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}

func describeContentType(ct string, body []byte) string {
	mt, _, _ := mime.ParseMediaType(ct)
	if mt == "" {
		mt = "none"
	}
	if len(body) == 0 {
		return " (empty body, Content-Type " + mt + ")"
	}
	return " (Content-Type " + mt + ")"
}

// recordsOf extracts the records array from a valid JSON body, from
// where scanBody located it (sc) when it could.
func (f *Fetcher) recordsOf(body []byte, sc bodyScan) ([]gjson.Result, error) {
	if !sc.located || !sc.found || body[sc.start] != '[' {
		return f.records(body) // and its errors
	}
	s := string(body)
	recs := make([]gjson.Result, len(sc.elems))
	for i, e := range sc.elems {
		recs[i] = gjson.Parse(s[e[0]:e[1]])
		recs[i].Index = e[0]
	}
	return recs, nil
}

// errorBeside quotes the first of the body's top-level error keys
// (nullPageErrorKeys) that is not empty, for a message about a body
// without its records: a GraphQL server that refused the query (a field
// the schema lost, over GET without error_path) says which field there.
func (f *Fetcher) errorBeside(body []byte) string {
	for _, k := range nullPageErrorKeys {
		if v := gjson.GetBytes(body, gjson.Escape(k)); errorValue(v) {
			return fmt.Sprintf("; error payload at %s: %s", k, f.excerpt([]byte(v.Raw)))
		}
	}
	return ""
}

// records extracts the records array from a valid JSON body.
func (f *Fetcher) records(body []byte) ([]gjson.Result, error) {
	path := f.cfg.Source.Records
	v := gjson.ParseBytes(body)
	where := "the response body"
	if path != "" {
		// gjson reads a path into a top-level string as the string's text
		// (`"[[1]]"` at 0 is `[1]`): a path selects only in an object or
		// an array.
		if !v.IsObject() && !v.IsArray() {
			return nil, fmt.Errorf("records path %s: the response body is %s, not an object or an array", path, kindOf(v))
		}
		v = v.Get(path)
		where = "records path " + path
		if !v.Exists() {
			return nil, fmt.Errorf("records path %s not found in the response (top-level keys: %s)%s", path, topKeys(body), f.errorBeside(body))
		}
		// After a pipe or a modifier gjson may read a string value's text
		// the same way (`x|0` on {"x":"[[\"a\"]]"}); a plain path never
		// does, so only those selections are checked.
		if _, plain := plainPrefix(path); !plain && v.IsArray() && !gjson.Valid(v.Raw) {
			return nil, fmt.Errorf("records path %s does not select JSON in the response", path)
		}
	}
	switch {
	case v.Type == gjson.Null:
		return nil, nil
	case !v.IsArray():
		return nil, fmt.Errorf("%s is %s, not an array of records", where, kindOf(v))
	}
	return v.Array(), nil
}

func topKeys(body []byte) string {
	var keys []string
	gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool {
		keys = append(keys, k.String())
		return len(keys) < 10
	})
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

func kindOf(v gjson.Result) string {
	switch {
	case v.IsObject():
		return "an object"
	case v.Type == gjson.String:
		return "a string"
	case v.Type == gjson.Number:
		return "a number"
	case v.Type == gjson.True, v.Type == gjson.False:
		return "a boolean"
	}
	return "null"
}
