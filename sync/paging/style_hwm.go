package paging

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
)

// StyleHWM walks by a high-water mark: pagination.param carries the highest
// mark (at pagination.field) of the page before, and the job keeps the
// mark between runs.
const StyleHWM = "hwm"

// hwmPaging is the hwm style.
type hwmPaging struct{}

// HWMAt is an hwm style position: the mark sent ("" = no mark yet), and
// the page size the API serves when it caps pages below pagination.size
// (0 = that size).
type HWMAt struct {
	Mark string `json:"mark,omitempty"`
	Size int    `json:"size,omitempty"`
}

func (HWMAt) Style() string      { return StyleHWM }
func (a HWMAt) served() int      { return a.Size }
func (a HWMAt) Serving(n int) At { a.Size = n; return a }

// hwmOf is pos as an hwm style position (the zero one for another style).
func hwmOf(pos At) HWMAt { a, _ := pos.(HWMAt); return a }

func (hwmPaging) Traits() Traits {
	return Traits{name: StyleHWM, uses: []string{"param", "field", "initial", "overlap", "in", "template"}, KeepsMark: true, Ordered: true, required: []string{"field", "param", "size"}, sizeNeedsParam: true}
}

func (hwmPaging) fill(pg *spec.Pagination, bad BadFunc) {
	if pg.Field == "" {
		bad("pagination.field", "is required with style hwm (path of the mark in each record)")
	}
	if pg.Param == "" {
		bad("pagination.param", "is required with style hwm (query parameter receiving the mark)")
	}
	if pg.Size <= 0 {
		bad("pagination.size", "is required with style hwm (records per page: a short page ends the walk)")
	}
	sizeNeedsParam(pg, bad)
	if err := CheckOverlap(pg.Overlap, pg.Initial, ""); err != nil {
		bad("pagination.overlap", "%v", err)
	}
	if pg.MaxFuture.Duration == 0 {
		pg.MaxFuture.Duration = DefaultMaxFuture
	}
	if pg.Initial != "" {
		if _, err := CheckMark(pg.Initial); err != nil {
			bad("pagination.initial", "%v", err)
		}
	}
}

func (hwmPaging) Start(_ spec.Pagination, mark string) At { return HWMAt{Mark: mark} }

func (hwmPaging) Request(pg spec.Pagination, pos At, q url.Values) string {
	if m := hwmOf(pos).Mark; m != "" {
		q.Set(pg.Param, m)
	}
	return ""
}

func (hwmPaging) Step(in StepIn) (StepOut, error) {
	pos, n, size := hwmOf(in.Pos), in.Resp.Raw, in.Size
	if n > 0 && CompareMarks(in.HWMMax, pos.Mark) <= 0 {
		if pos.Size > 0 && pos.Size < in.Pg.Size && n >= size {
			return StepOut{Next: pos, Own: CappedTie}, nil // decideEnd asks again at pagination.size
		}
		if size > 0 && n >= size {
			return StepOut{}, &contract.Error{Class: contract.Permanent,
				Msg:  fmt.Sprintf("a full page of %d records made no progress past mark %s", n, pos.Mark),
				Hint: "more than pagination.size records share one mark: raise pagination.size"}
		}
		return StepOut{Next: pos, Own: StyleEnd, Why: fmt.Sprintf("makes no progress (%d of %d records)", n, size)}, nil
	}
	return StepOut{Next: HWMAt{Mark: in.HWMMax, Size: pos.Size}, Own: in.Own, Why: in.Why}, nil
}

func (hwmPaging) describe(pos At, _ Redacter) string {
	if m := hwmOf(pos).Mark; m != "" {
		return "mark " + m
	}
	return "no mark"
}

func (hwmPaging) parse(v string) (At, error) {
	m, err := CheckMark(v)
	if err != nil {
		return HWMAt{}, err
	}
	return HWMAt{Mark: m}, nil
}

func (hwmPaging) lastBefore(_, next, to At) bool {
	return CompareMarks(hwmOf(next).Mark, hwmOf(to).Mark) > 0
}

func (hwmPaging) decode(b json.RawMessage) (At, error) { return decodeAt[HWMAt](b) }

func (hwmPaging) legacy(l legacyAt) (At, bool) {
	return HWMAt{Mark: l.Mark, Size: l.Size}, l.Mark != ""
}
