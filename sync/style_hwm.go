package sync

import (
	"fmt"
	"net/url"

	"github.com/idemsync/idemsync/contract"
)

// StyleHWM walks by a high-water mark: pagination.param carries the highest
// mark (at pagination.field) of the page before, and the job keeps the
// mark between runs.
const StyleHWM = "hwm"

// hwmPaging is the hwm style.
type hwmPaging struct{}

func (hwmPaging) traits() styleTraits {
	return styleTraits{name: StyleHWM, uses: []string{"param", "field", "initial", "overlap", "in", "template"}, keepsMark: true, ordered: true, required: []string{"field", "param", "size"}, sizeNeedsParam: true}
}

func (hwmPaging) fill(pg *Pagination, bad badFunc) {
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
	if err := CheckOverlap(pg.Overlap); err != nil {
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

func (hwmPaging) start(_ Pagination, mark string) Position { return Position{Mark: mark} }

func (hwmPaging) request(pg Pagination, pos Position, q url.Values) string {
	if pos.Mark != "" {
		q.Set(pg.Param, pos.Mark)
	}
	return ""
}

func (hwmPaging) step(p *pager, pos Position, resp *contract.Response, hwmMax string, own ownEnd, why string) (Position, ownEnd, string, error) {
	n, size := resp.Raw, p.size(pos)
	if n > 0 && CompareMarks(hwmMax, pos.Mark) <= 0 {
		if pos.Size > 0 && pos.Size < p.job.Pagination.Size && n >= size {
			return pos, cappedTie, "", nil // decideEnd asks again at pagination.size
		}
		if size > 0 && n >= size {
			return Position{}, 0, "", &contract.Error{Class: contract.Permanent,
				Msg:  fmt.Sprintf("a full page of %d records made no progress past mark %s", n, pos.Mark),
				Hint: "more than pagination.size records share one mark: raise pagination.size"}
		}
		return pos, styleEnd, fmt.Sprintf("makes no progress (%d of %d records)", n, size), nil
	}
	return Position{Mark: hwmMax, Size: pos.Size}, own, why, nil
}

func (hwmPaging) describe(pos Position, _ *Redactor) string {
	if pos.Mark == "" {
		return "no mark"
	}
	return "mark " + pos.Mark
}

func (hwmPaging) parse(v string) (Position, error) {
	m, err := CheckMark(v)
	if err != nil {
		return Position{}, err
	}
	return Position{Mark: m}, nil
}

func (hwmPaging) lastBefore(_, next, to Position) bool { return CompareMarks(next.Mark, to.Mark) > 0 }

func (hwmPaging) holds(pos Position) bool { return pos.Mark != "" }
