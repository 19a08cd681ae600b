package sync

import (
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/idemsync/idemsync/jobfile/spec"
)

// StyleOffset counts records: pagination.param (default offset) carries the
// offset of the page's first record, pagination.size_param (default limit)
// the required pagination.size.
const StyleOffset = "offset"

// offsetPaging is the offset style.
type offsetPaging struct{}

// offsetAt is an offset style position: the offset of the page's first
// record, and the page size the API serves when it caps pages below
// pagination.size (0 = that size).
type offsetAt struct {
	Offset int64 `json:"offset"`
	Size   int   `json:"size,omitempty"`
}

func (offsetAt) Style() string      { return StyleOffset }
func (a offsetAt) served() int      { return a.Size }
func (a offsetAt) serving(n int) At { a.Size = n; return a }

// offsetOf is pos as an offset style position (the zero one for another
// style).
func offsetOf(pos At) offsetAt { a, _ := pos.(offsetAt); return a }

func (offsetPaging) traits() styleTraits {
	return styleTraits{name: StyleOffset, uses: []string{"param", "total", "continue", "in", "template"}, ordered: true, required: []string{"size"}}
}

func (offsetPaging) fill(pg *spec.Pagination, bad badFunc) {
	setParam(pg, "offset")
	if pg.SizeParam == "" {
		pg.SizeParam = "limit"
	}
	if pg.Size <= 0 {
		bad("pagination.size", "is required with style offset (records per page)")
	}
}

func (offsetPaging) start(spec.Pagination, string) At { return offsetAt{} }

func (offsetPaging) request(pg spec.Pagination, pos At, q url.Values) string {
	q.Set(pg.Param, strconv.FormatInt(offsetOf(pos).Offset, 10))
	return ""
}

func (offsetPaging) step(in stepIn) (stepOut, error) {
	return stepOut{next: offsetAfter(in.pos, int64(in.resp.Raw)), own: in.own, why: in.why}, nil
}

func (offsetPaging) describe(pos At, _ *Redactor) string {
	return "offset " + strconv.FormatInt(offsetOf(pos).Offset, 10)
}

func (offsetPaging) parse(v string) (At, error) {
	n, err := parseCount(v, StyleOffset)
	return offsetAt{Offset: n}, err
}

func (offsetPaging) lastBefore(_, next, to At) bool {
	return offsetOf(next).Offset > offsetOf(to).Offset
}

func (offsetPaging) ahead(pos At, k int64, size int) At {
	return offsetAfter(pos, k*int64(size))
}

func (offsetPaging) seenThrough(_ spec.Pagination, pos At, _, n int) (int64, bool) {
	return offsetAfter(pos, int64(n)).Offset, true
}

func (offsetPaging) decode(b json.RawMessage) (At, error) { return decodeAt[offsetAt](b) }

func (offsetPaging) legacy(l legacyAt) (At, bool) {
	return offsetAt{Offset: l.Offset, Size: l.Size}, l.Offset != 0
}

// offsetAfter is the position records past pos, in pages of the size the
// API serves at pos: the one place offsets are added.
func offsetAfter(pos At, records int64) offsetAt {
	a := offsetOf(pos)
	return offsetAt{Offset: a.Offset + records, Size: a.Size}
}
