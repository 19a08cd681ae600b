package paging

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

// OffsetPaging is the offset style.
type OffsetPaging struct{}

// OffsetAt is an offset style position: the offset of the page's first
// record, and the page size the API serves when it caps pages below
// pagination.size (0 = that size).
type OffsetAt struct {
	Offset int64 `json:"offset"`
	Size   int   `json:"size,omitempty"`
}

func (OffsetAt) Style() string      { return StyleOffset }
func (a OffsetAt) served() int      { return a.Size }
func (a OffsetAt) Serving(n int) At { a.Size = n; return a }

// OffsetOf is pos as an offset style position (the zero one for another
// style).
func OffsetOf(pos At) OffsetAt { a, _ := pos.(OffsetAt); return a }

func (OffsetPaging) Traits() Traits {
	return Traits{name: StyleOffset, uses: []string{"param", "total", "continue", "in", "template"}, Ordered: true, required: []string{"size"}}
}

func (OffsetPaging) fill(pg *spec.Pagination, bad BadFunc) {
	setParam(pg, "offset")
	if pg.SizeParam == "" {
		pg.SizeParam = "limit"
	}
	if pg.Size <= 0 {
		bad("pagination.size", "is required with style offset (records per page)")
	}
}

func (OffsetPaging) Start(spec.Pagination, string) At { return OffsetAt{} }

func (OffsetPaging) Request(pg spec.Pagination, pos At, q url.Values) string {
	q.Set(pg.Param, strconv.FormatInt(OffsetOf(pos).Offset, 10))
	return ""
}

func (OffsetPaging) Step(in StepIn) (StepOut, error) {
	return StepOut{Next: offsetAfter(in.Pos, int64(in.Resp.Raw)), Own: in.Own, Why: in.Why}, nil
}

func (OffsetPaging) describe(pos At, _ Redacter) string {
	return "offset " + strconv.FormatInt(OffsetOf(pos).Offset, 10)
}

func (OffsetPaging) parse(v string) (At, error) {
	n, err := parseCount(v, StyleOffset)
	return OffsetAt{Offset: n}, err
}

func (OffsetPaging) lastBefore(_, next, to At) bool {
	return OffsetOf(next).Offset > OffsetOf(to).Offset
}

func (OffsetPaging) Ahead(pos At, k int64, size int) At {
	return offsetAfter(pos, k*int64(size))
}

func (OffsetPaging) SeenThrough(_ spec.Pagination, pos At, _, n int) (int64, bool) {
	return offsetAfter(pos, int64(n)).Offset, true
}

func (OffsetPaging) decode(b json.RawMessage) (At, error) { return decodeAt[OffsetAt](b) }

func (OffsetPaging) legacy(l legacyAt) (At, bool) {
	return OffsetAt{Offset: l.Offset, Size: l.Size}, l.Offset != 0
}

// offsetAfter is the position records past pos, in pages of the size the
// API serves at pos: the one place offsets are added.
func offsetAfter(pos At, records int64) OffsetAt {
	a := OffsetOf(pos)
	return OffsetAt{Offset: a.Offset + records, Size: a.Size}
}
