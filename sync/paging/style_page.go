package paging

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/idemsync/idemsync/jobfile/spec"
)

// StylePage numbers pages: pagination.param (default page) carries the page
// number, from pagination.start (default 1).
const StylePage = "page"

// pagePaging is the page style.
type pagePaging struct{}

// PageAt is a page style position: the page number, and the page size the
// API serves when it caps pages below pagination.size (0 = that size).
type PageAt struct {
	Page int64 `json:"page"`
	Size int   `json:"size,omitempty"`
}

func (PageAt) Style() string      { return StylePage }
func (a PageAt) served() int      { return a.Size }
func (a PageAt) Serving(n int) At { a.Size = n; return a }

// PageOf is pos as a page style position (the zero one for another style).
func PageOf(pos At) PageAt { a, _ := pos.(PageAt); return a }

func (pagePaging) Traits() Traits {
	return Traits{name: StylePage, uses: []string{"param", "start", "total_pages", "total", "continue", "in", "template"}, Ordered: true, PageNumbers: true, sizeNeedsParam: true}
}

func (pagePaging) fill(pg *spec.Pagination, bad BadFunc) {
	setParam(pg, "page")
	if pg.Start == nil {
		one := int64(1)
		pg.Start = &one
	}
	if pg.Size < 0 {
		bad("pagination.size", "must be positive")
	}
	sizeNeedsParam(pg, bad)
}

func (pagePaging) Start(pg spec.Pagination, _ string) At { return PageAt{Page: *pg.Start} }

func (pagePaging) Request(pg spec.Pagination, pos At, q url.Values) string {
	q.Set(pg.Param, strconv.FormatInt(PageOf(pos).Page, 10))
	return ""
}

func (s pagePaging) Step(in StepIn) (StepOut, error) {
	return StepOut{Next: s.Ahead(in.Pos, 1, 0), Own: in.Own, Why: in.Why}, nil
}

func (pagePaging) describe(pos At, _ Redacter) string {
	return "page " + strconv.FormatInt(PageOf(pos).Page, 10)
}

func (pagePaging) parse(v string) (At, error) {
	n, err := parseCount(v, StylePage)
	return PageAt{Page: n}, err
}

func (pagePaging) lastBefore(_, next, to At) bool { return PageOf(next).Page > PageOf(to).Page }

func (pagePaging) Ahead(pos At, k int64, _ int) At {
	a := PageOf(pos)
	return PageAt{Page: a.Page + k, Size: a.Size}
}

func (pagePaging) SeenThrough(pg spec.Pagination, pos At, size, n int) (int64, bool) {
	if size <= 0 {
		return 0, false
	}
	return (PageOf(pos).Page-*pg.Start)*int64(size) + int64(n), true
}

func (pagePaging) decode(b json.RawMessage) (At, error) { return decodeAt[PageAt](b) }

func (pagePaging) legacy(l legacyAt) (At, bool) {
	return PageAt{Page: l.Page, Size: l.Size}, l.Page != 0
}

// parseCount reads a page number or offset given to replay.
func parseCount(v, style string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a %s number", v, style)
	}
	return n, nil
}
