package sync

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

// pageAt is a page style position: the page number, and the page size the
// API serves when it caps pages below pagination.size (0 = that size).
type pageAt struct {
	Page int64 `json:"page"`
	Size int   `json:"size,omitempty"`
}

func (pageAt) Style() string      { return StylePage }
func (a pageAt) served() int      { return a.Size }
func (a pageAt) serving(n int) At { a.Size = n; return a }

// pageOf is pos as a page style position (the zero one for another style).
func pageOf(pos At) pageAt { a, _ := pos.(pageAt); return a }

func (pagePaging) traits() styleTraits {
	return styleTraits{name: StylePage, uses: []string{"param", "start", "total_pages", "total", "continue", "in", "template"}, ordered: true, pageNumbers: true, sizeNeedsParam: true}
}

func (pagePaging) fill(pg *spec.Pagination, bad badFunc) {
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

func (pagePaging) start(pg spec.Pagination, _ string) At { return pageAt{Page: *pg.Start} }

func (pagePaging) request(pg spec.Pagination, pos At, q url.Values) string {
	q.Set(pg.Param, strconv.FormatInt(pageOf(pos).Page, 10))
	return ""
}

func (s pagePaging) step(in stepIn) (stepOut, error) {
	return stepOut{next: s.ahead(in.pos, 1, 0), own: in.own, why: in.why}, nil
}

func (pagePaging) describe(pos At, _ *Redactor) string {
	return "page " + strconv.FormatInt(pageOf(pos).Page, 10)
}

func (pagePaging) parse(v string) (At, error) {
	n, err := parseCount(v, StylePage)
	return pageAt{Page: n}, err
}

func (pagePaging) lastBefore(_, next, to At) bool { return pageOf(next).Page > pageOf(to).Page }

func (pagePaging) ahead(pos At, k int64, _ int) At {
	a := pageOf(pos)
	return pageAt{Page: a.Page + k, Size: a.Size}
}

func (pagePaging) seenThrough(pg spec.Pagination, pos At, size, n int) (int64, bool) {
	if size <= 0 {
		return 0, false
	}
	return (pageOf(pos).Page-*pg.Start)*int64(size) + int64(n), true
}

func (pagePaging) decode(b json.RawMessage) (At, error) { return decodeAt[pageAt](b) }

func (pagePaging) legacy(l legacyAt) (At, bool) {
	return pageAt{Page: l.Page, Size: l.Size}, l.Page != 0
}

// parseCount reads a page number or offset given to replay.
func parseCount(v, style string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a %s number", v, style)
	}
	return n, nil
}
