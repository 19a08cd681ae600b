package pagesignal

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Field is a scalar found in a body: its GJSON path and value.
type Field struct {
	Path string
	Val  gjson.Result
}

// Key is the last key of the field's path, unescaped.
func (f Field) Key() string {
	k := f.Path
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] == '.' && (i == 0 || k[i-1] != '\\') {
			k = k[i+1:]
			break
		}
	}
	return strings.ReplaceAll(k, `\`, "")
}

// Holders are the objects where APIs put paging information, searched
// in this order after the top level; after them, any other object up to
// three levels deep (outside arrays) whose name speaks of paging (pag,
// link, cursor, meta, info, nav, next: page_details, paging.next).
var Holders = []string{"meta", "pagination", "paging", "page_info", "pageInfo", "links", "_links", "cursor",
	"cursors", "paging.cursors", "response_metadata", "metadata", "page", "result_info"}

// Find returns the first field whose normalised key match accepts and
// whose value ok accepts: the top level first, then Holders, then the
// other objects of the body by depth. Arrays (the records) are not
// searched.
func Find(body gjson.Result, match func(string) bool, ok func(gjson.Result) bool) (Field, bool) {
	for _, obj := range objects(body) {
		var hit Field
		found := false
		obj.val.ForEach(func(k, v gjson.Result) bool {
			if match(Norm(k.String())) && ok(v) {
				hit, found = Field{obj.prefix + EscapePath(k.String()), v}, true
				return false
			}
			return true
		})
		if found {
			return hit, true
		}
	}
	return Field{}, false
}

type object struct {
	prefix string
	val    gjson.Result
}

// objects lists the body's objects in the order Find searches them.
func objects(body gjson.Result) []object {
	if !body.IsObject() {
		return nil
	}
	out := []object{{"", body}}
	seen := map[string]bool{"": true}
	for _, h := range Holders {
		if v := body.Get(h); v.IsObject() {
			out = append(out, object{h + ".", v})
			seen[h+"."] = true
		}
	}
	level := []object{{"", body}}
	for depth := 1; depth < 3 && len(level) > 0; depth++ {
		var next []object
		for _, o := range level {
			o.val.ForEach(func(k, v gjson.Result) bool {
				if v.IsObject() && pagingName(Norm(k.String())) {
					c := object{o.prefix + EscapePath(k.String()) + ".", v}
					next = append(next, c)
					if !seen[c.prefix] {
						seen[c.prefix] = true
						out = append(out, c)
					}
				}
				return true
			})
		}
		level = next
	}
	return out
}

// pagingName reports whether an object's name speaks of paging.
func pagingName(n string) bool {
	for _, w := range []string{"pag", "link", "cursor", "meta", "info", "nav", "next"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// EscapePath escapes a key for use in a GJSON path.
func EscapePath(k string) string {
	var b strings.Builder
	for _, r := range k {
		if strings.ContainsRune(`.*?|#@\!=<>%,:"()[]{}`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// IsNumber, IsBool, IsText: the value kinds a signal may need.
func IsNumber(v gjson.Result) bool { return v.Type == gjson.Number }
func IsBool(v gjson.Result) bool   { return v.Type == gjson.True || v.Type == gjson.False }
func IsText(v gjson.Result) bool   { return v.Type == gjson.String && strings.TrimSpace(v.Str) != "" }

// IsURL: an absolute or relative URL (http(s)://…, /path, ?query).
func IsURL(v gjson.Result) bool {
	s := v.String()
	return v.Type == gjson.String && (strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") ||
		strings.HasPrefix(s, "/") || strings.HasPrefix(s, "?"))
}

// IsTokenValue: text that is not a URL.
func IsTokenValue(v gjson.Result) bool { return IsText(v) && !IsURL(v) }
