package sync

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/idemsync/idemsync/contract"
)

// StylePage numbers pages: pagination.param (default page) carries the page
// number, from pagination.start (default 1).
const StylePage = "page"

// pagePaging is the page style.
type pagePaging struct{}

func (pagePaging) traits() styleTraits {
	return styleTraits{name: StylePage, uses: []string{"param", "start", "total_pages", "total", "continue", "in", "template"}, ordered: true, pageNumbers: true, sizeNeedsParam: true}
}

func (pagePaging) fill(pg *Pagination, bad badFunc) {
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

func (pagePaging) start(pg Pagination, _ string) Position { return Position{Page: *pg.Start} }

func (pagePaging) request(pg Pagination, pos Position, q url.Values) string {
	q.Set(pg.Param, strconv.FormatInt(pos.Page, 10))
	return ""
}

func (s pagePaging) step(_ *pager, pos Position, _ *contract.Response, _ string, own ownEnd, why string) (Position, ownEnd, string, error) {
	return s.ahead(pos, 1, 0), own, why, nil
}

func (pagePaging) describe(pos Position, _ *Redactor) string {
	return "page " + strconv.FormatInt(pos.Page, 10)
}

func (pagePaging) parse(v string) (Position, error) {
	n, err := parseCount(v, StylePage)
	return Position{Page: n}, err
}

func (pagePaging) lastBefore(_, next, to Position) bool { return next.Page > to.Page }

func (pagePaging) ahead(pos Position, k int64, _ int) Position {
	return Position{Page: pos.Page + k, Size: pos.Size}
}

func (pagePaging) seenThrough(pg Pagination, pos Position, size, n int) (int64, bool) {
	if size <= 0 {
		return 0, false
	}
	return (pos.Page-*pg.Start)*int64(size) + int64(n), true
}

// parseCount reads a page number or offset given to replay.
func parseCount(v, style string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a %s number", v, style)
	}
	return n, nil
}

func (pagePaging) holds(pos Position) bool { return pos.Page != 0 }
