package pagesignal

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Kind is the kind of a sign that a list goes on.
type Kind int

const (
	KindNext     Kind = iota + 1 // a non-empty next position (cursor, token, id, URL)
	KindHasMore                  // a has-more flag that is true
	KindNotDone                  // a done or is-last flag that is false
	KindTotal                    // a total larger than the records on the page
	KindPages                    // a page count above 1
	KindFullPage                 // as many records as a size parameter asked for
)

// Sign is one sign that the list goes on past a page: where it is (a body
// path, or a query parameter for KindFullPage) and what it says.
type Sign struct {
	Kind  Kind
	Where string
	Says  string
}

func (s Sign) String() string { return s.Where + " " + s.Says }

// More returns the signs a page gives that its list goes on past it: body
// is the page's JSON, query the query it was asked with and n the records
// it holds. A page without any is, as far as it shows, the whole list.
func More(body gjson.Result, query url.Values, n int) []Sign {
	var out []Sign
	if f, ok := Find(body, IsNext, nonEmpty); ok {
		out = append(out, Sign{KindNext, f.Path, "holds " + excerpt(f.Val)})
	}
	if f, ok := Find(body, HasMore, IsBool); ok && f.Val.Bool() {
		out = append(out, Sign{KindHasMore, f.Path, "is true"})
	}
	if f, ok := Find(body, Done, IsBool); ok && !f.Val.Bool() {
		out = append(out, Sign{KindNotDone, f.Path, "is false"})
	}
	if f, ok := Find(body, Total, IsNumber); ok && f.Val.Int() > int64(n) {
		out = append(out, Sign{KindTotal, f.Path, fmt.Sprintf("says %d records (%d on the page)", f.Val.Int(), n)})
	}
	if f, ok := Find(body, PageCount, IsNumber); ok && f.Val.Int() > 1 {
		out = append(out, Sign{KindPages, f.Path, fmt.Sprintf("says %d pages", f.Val.Int())})
	}
	if k, size, ok := SizeParam(query); ok && n == size {
		out = append(out, Sign{KindFullPage, k, fmt.Sprintf("asked for %d records and the page holds %d", size, n)})
	}
	return out
}

// SizeParam returns the query's page-size parameter (one of SizeParams)
// and its value, when it has one that is a positive number.
func SizeParam(query url.Values) (string, int, bool) {
	for _, want := range SizeParams {
		for k, vs := range query {
			if Norm(k) != Norm(want) || len(vs) == 0 {
				continue
			}
			if size, err := strconv.Atoi(vs[0]); err == nil && size > 0 {
				return k, size, true
			}
		}
	}
	return "", 0, false
}

// nonEmpty accepts a next position that names one: text, a non-zero
// number, true, or an object with a non-empty href (HAL).
func nonEmpty(v gjson.Result) bool {
	switch v.Type {
	case gjson.String:
		return strings.TrimSpace(v.Str) != ""
	case gjson.Number:
		return v.Num != 0
	case gjson.True:
		return true
	}
	return v.IsObject() && IsText(v.Get("href"))
}

// excerpt is a value as a person reads it, cut at 40 characters (a token
// may be long; it is not a secret, the API hands it to anyone).
func excerpt(v gjson.Result) string {
	s := v.Raw
	if v.IsObject() {
		s = v.Get("href").Raw
	}
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}
