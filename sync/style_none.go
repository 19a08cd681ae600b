package sync

import (
	"fmt"
	"net/url"

	"strings"

	"github.com/idemsync/idemsync/contract"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/pagesignal"
)

// StyleNone fetches source.url once: the one page is the whole source.
const StyleNone = "none"

// nonePaging is the none style, and the style of an unknown name.
type nonePaging struct{}

func (nonePaging) traits() styleTraits {
	return styleTraits{name: StyleNone, uses: []string{"one_page"}}
}

// fill has nothing to fill: none uses no key of pagingKeys but one_page.
func (nonePaging) fill(*Pagination, badFunc) {}

func (nonePaging) start(Pagination, string) Position { return Position{} }

func (nonePaging) request(Pagination, Position, url.Values) string { return "" }

// step ends the walk at the one page, unless the page says the list goes
// on (pagesignal.More) and the job did not say one_page: a run never
// completes a list that says it has more (docs/guarantees.md).
func (nonePaging) step(p *pager, pos Position, resp *contract.Response, _ string, _ ownEnd, _ string) (Position, ownEnd, string, error) {
	if p.job.Pagination.OnePage {
		return pos, styleEnd, "is the only page", nil
	}
	var query url.Values
	if u, err := url.Parse(resp.URL); err == nil {
		query = u.Query()
	}
	signs := pagesignal.More(gjson.ParseBytes(resp.Body), query, resp.Raw)
	if len(signs) == 0 {
		return pos, styleEnd, "is the only page", nil
	}
	says := make([]string, len(signs))
	for i, s := range signs {
		says[i] = p.job.Secrets.Redact(s.String())
	}
	return pos, 0, "", &contract.Error{Class: contract.Permanent,
		Msg:  fmt.Sprintf("style none: the one page says the list goes on (%s); nothing was committed", strings.Join(says, "; ")),
		Hint: moreHint(signs[0]) + "; or, when this API echoes it on a page that is the whole list, set pagination.one_page: true (docs/guarantees.md)"}
}

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

func (nonePaging) describe(Position, *Redactor) string { return "start" }

func (nonePaging) parse(string) (Position, error) {
	return Position{}, fmt.Errorf("style %s has no positions to replay from", StyleNone)
}

func (nonePaging) lastBefore(pos, _, to Position) bool { return sameAt(pos, to) }

func (nonePaging) holds(Position) bool { return false }
