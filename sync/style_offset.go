package sync

import (
	"net/url"
	"strconv"

	"github.com/idemsync/idemsync/contract"
)

// StyleOffset counts records: pagination.param (default offset) carries the
// offset of the page's first record, pagination.size_param (default limit)
// the required pagination.size.
const StyleOffset = "offset"

// offsetPaging is the offset style.
type offsetPaging struct{}

func (offsetPaging) traits() styleTraits {
	return styleTraits{name: StyleOffset, uses: []string{"param", "total", "continue", "in", "template"}, ordered: true, required: []string{"size"}}
}

func (offsetPaging) fill(pg *Pagination, bad badFunc) {
	setParam(pg, "offset")
	if pg.SizeParam == "" {
		pg.SizeParam = "limit"
	}
	if pg.Size <= 0 {
		bad("pagination.size", "is required with style offset (records per page)")
	}
}

func (offsetPaging) start(Pagination, string) Position { return Position{} }

func (offsetPaging) request(pg Pagination, pos Position, q url.Values) string {
	q.Set(pg.Param, strconv.FormatInt(pos.Offset, 10))
	return ""
}

func (offsetPaging) step(_ *pager, pos Position, resp *contract.Response, _ string, own ownEnd, why string) (Position, ownEnd, string, error) {
	return offsetAfter(pos, int64(resp.Raw)), own, why, nil
}

func (offsetPaging) describe(pos Position, _ *Redactor) string {
	return "offset " + strconv.FormatInt(pos.Offset, 10)
}

func (offsetPaging) parse(v string) (Position, error) {
	n, err := parseCount(v, StyleOffset)
	return Position{Offset: n}, err
}

func (offsetPaging) lastBefore(_, next, to Position) bool { return next.Offset > to.Offset }

func (offsetPaging) ahead(pos Position, k int64, size int) Position {
	return offsetAfter(pos, k*int64(size))
}

func (offsetPaging) seenThrough(_ Pagination, pos Position, _, n int) (int64, bool) {
	return offsetAfter(pos, int64(n)).Offset, true
}

// offsetAfter is the position records past pos, in pages of the size the
// API serves at pos: the one place offsets are added.
func offsetAfter(pos Position, records int64) Position {
	return Position{Offset: pos.Offset + records, Size: pos.Size}
}

func (offsetPaging) holds(pos Position) bool { return pos.Offset != 0 }
