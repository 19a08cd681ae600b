package sync

import (
	"bytes"
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
	prefix, plain := plainPrefix(f.job.Source.Records)
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
