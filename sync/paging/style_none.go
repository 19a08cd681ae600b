package paging

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
	"github.com/idemsync/idemsync/pagesignal"
	"github.com/tidwall/gjson"
)

// StyleNone fetches source.url once: the one page is the whole source.
const StyleNone = "none"

// nonePaging is the none style, and the style of an unknown name.
type nonePaging struct{}

// NoneAt is the none style's one position: source.url.
type NoneAt struct{}

func (NoneAt) Style() string { return StyleNone }

func (nonePaging) Traits() Traits {
	return Traits{name: StyleNone, uses: []string{"one_page"}}
}

// fill has nothing to fill: none uses no key of pagingKeys.
func (nonePaging) fill(*spec.Pagination, BadFunc) {}

func (nonePaging) Start(spec.Pagination, string) At { return NoneAt{} }

func (nonePaging) Request(spec.Pagination, At, url.Values) string { return "" }

// Step ends the walk at the one page, unless the page says the list goes
// on (pagesignal.More) and the job did not say one_page: a run never
// completes a list that says it has more (docs/guarantees.md).
func (nonePaging) Step(in StepIn) (StepOut, error) {
	only := StepOut{Next: in.Pos, Own: StyleEnd, Why: "is the only page"}
	resp := in.Resp
	if in.Pg.OnePage {
		return only, nil
	}
	var query url.Values
	if u, err := url.Parse(resp.URL); err == nil {
		query = u.Query()
	}
	signs := pagesignal.More(gjson.ParseBytes(resp.Body), query, resp.Raw)
	if len(signs) == 0 {
		return only, nil
	}
	says := make([]string, len(signs))
	for i, s := range signs {
		says[i] = in.Redact(s.String())
	}
	return StepOut{}, &contract.Error{Class: contract.Permanent,
		Msg:  fmt.Sprintf("style none: the one page says the list goes on (%s); nothing was committed", strings.Join(says, "; ")),
		Hint: moreHint(signs[0]) + "; or, when this API echoes it on a page that is the whole list, set pagination.one_page: true (docs/guarantees.md)"}
}

func (nonePaging) describe(At, Redacter) string { return "start" }

func (nonePaging) parse(string) (At, error) {
	return NoneAt{}, fmt.Errorf("style %s has no positions to replay from", StyleNone)
}

// lastBefore: none has one page, the last of any walk.
func (nonePaging) lastBefore(_, _, _ At) bool { return false }

func (nonePaging) decode(json.RawMessage) (At, error) { return NoneAt{}, nil }

func (nonePaging) legacy(legacyAt) (At, bool) { return NoneAt{}, false }

// moreHint names the style that follows the first sign of more.
func moreHint(s pagesignal.Sign) string {
	switch s.Kind {
	case pagesignal.KindNext:
		return "walk the pages: style cursor with next_url: " + s.Where + " for a URL, or next: " + s.Where + " and the param that takes it (`idemsync init URL` proposes one)"
	case pagesignal.KindHasMore:
		return "walk the pages: style page, offset or cursor with has_more: " + s.Where + " (docs/pagination.md)"
	case pagesignal.KindNotDone:
		return "walk the pages: the style of the next link or cursor the API gives beside " + s.Where + " (docs/pagination.md)"
	case pagesignal.KindPages:
		return "walk the pages: style page with total_pages: " + s.Where
	case pagesignal.KindTotal:
		return "walk the pages: style offset or page with total: " + s.Where
	}
	return "walk the pages: style page or offset with size_param: " + s.Where + " (docs/pagination.md)"
}
