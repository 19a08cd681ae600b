package paging

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/idemsync/idemsync/jobfile/spec"
)

// StyleLink follows the RFC 8288 Link rel="next" header of each page.
const StyleLink = "link"

// linkPaging is the link style.
type linkPaging struct{}

// LinkAt is a link style position: the URL of the page's Link rel="next"
// before it ("" = source.url, the first page).
type LinkAt struct {
	URL string `json:"url,omitempty"`
}

func (LinkAt) Style() string { return StyleLink }

func (a LinkAt) loopKey() string {
	if a.URL == "" {
		return ""
	}
	return "u:" + a.URL
}

// linkOf is pos as a link style position (the zero one for another style).
func linkOf(pos At) LinkAt { a, _ := pos.(LinkAt); return a }

func (linkPaging) Traits() Traits {
	return Traits{name: StyleLink, uses: []string{"total", "continue"}, TrustsEnd: true, OwnsLink: true, sizeNeedsParam: true}
}

func (linkPaging) fill(pg *spec.Pagination, bad BadFunc) {
	sizeNeedsParam(pg, bad)
}

func (linkPaging) Start(spec.Pagination, string) At { return LinkAt{} }

func (linkPaging) Request(_ spec.Pagination, pos At, _ url.Values) string { return linkOf(pos).URL }

func (linkPaging) Step(in StepIn) (StepOut, error) {
	next := NextLink(in.Resp.Header.Values("Link"))
	if next == "" {
		return StepOut{Next: in.Pos, Own: StyleEnd, Why: `has no Link rel="next"`}, nil
	}
	abs, err := resolveURL(in.Resp.URL, next)
	if err != nil {
		return StepOut{}, fmt.Errorf("link header next URL: %w", err)
	}
	return StepOut{Next: LinkAt{URL: in.CheckpointURL(abs)}, Own: goesOn}, nil
}

func (linkPaging) describe(pos At, r Redacter) string {
	if u := linkOf(pos).URL; u != "" {
		return r.Redact(u)
	}
	return "first page"
}

func (linkPaging) parse(v string) (At, error) {
	if err := ValidURL(v); err != nil {
		return LinkAt{}, fmt.Errorf("%q is not a next-page URL: %v", v, err)
	}
	return LinkAt{URL: v}, nil
}

// lastBefore: the page at pos is the last when it is to itself (URLs
// compared whatever the order of their query parameters).
func (linkPaging) lastBefore(pos, _, to At) bool {
	t := linkOf(to)
	return t.URL != "" && sameURL(linkOf(pos).URL, t.URL)
}

func (linkPaging) decode(b json.RawMessage) (At, error) { return decodeAt[LinkAt](b) }

func (linkPaging) legacy(l legacyAt) (At, bool) { return LinkAt{URL: l.URL}, l.URL != "" }
