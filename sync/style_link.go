package sync

import (
	"fmt"
	"net/url"

	"github.com/idemsync/idemsync/contract"
)

// StyleLink follows the RFC 8288 Link rel="next" header of each page.
const StyleLink = "link"

// linkPaging is the link style.
type linkPaging struct{}

func (linkPaging) traits() styleTraits {
	return styleTraits{name: StyleLink, uses: []string{"total", "continue"}, trustsEnd: true, ownsLink: true, sizeNeedsParam: true}
}

func (linkPaging) fill(pg *Pagination, bad badFunc) {
	sizeNeedsParam(pg, bad)
}

func (linkPaging) start(Pagination, string) Position { return Position{} }

func (linkPaging) request(_ Pagination, pos Position, _ url.Values) string { return pos.URL }

func (linkPaging) step(p *pager, pos Position, resp *contract.Response, _ string, _ ownEnd, _ string) (Position, ownEnd, string, error) {
	next := NextLink(resp.Header.Values("Link"))
	if next == "" {
		return pos, styleEnd, `has no Link rel="next"`, nil
	}
	abs, err := resolveURL(resp.URL, next)
	if err != nil {
		return Position{}, 0, "", fmt.Errorf("link header next URL: %w", err)
	}
	return Position{URL: p.src.CheckpointURL(abs)}, goesOn, "", nil
}

func (linkPaging) describe(pos Position, r *Redactor) string {
	if pos.URL == "" {
		return "first page"
	}
	return r.Redact(pos.URL)
}

func (linkPaging) parse(v string) (Position, error) {
	if err := ValidURL(v); err != nil {
		return Position{}, fmt.Errorf("%q is not a next-page URL: %v", v, err)
	}
	return Position{URL: v}, nil
}

func (linkPaging) lastBefore(pos, _, to Position) bool { return sameAt(pos, to) }

func (linkPaging) holds(pos Position) bool { return pos.URL != "" }
