package sync

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

// linkAt is a link style position: the URL of the page's Link rel="next"
// before it ("" = source.url, the first page).
type linkAt struct {
	URL string `json:"url,omitempty"`
}

func (linkAt) Style() string { return StyleLink }

func (a linkAt) loopKey() string {
	if a.URL == "" {
		return ""
	}
	return "u:" + a.URL
}

// linkOf is pos as a link style position (the zero one for another style).
func linkOf(pos At) linkAt { a, _ := pos.(linkAt); return a }

func (linkPaging) traits() styleTraits {
	return styleTraits{name: StyleLink, uses: []string{"total", "continue"}, trustsEnd: true, ownsLink: true, sizeNeedsParam: true}
}

func (linkPaging) fill(pg *spec.Pagination, bad badFunc) {
	sizeNeedsParam(pg, bad)
}

func (linkPaging) start(spec.Pagination, string) At { return linkAt{} }

func (linkPaging) request(_ spec.Pagination, pos At, _ url.Values) string { return linkOf(pos).URL }

func (linkPaging) step(in stepIn) (stepOut, error) {
	next := NextLink(in.resp.Header.Values("Link"))
	if next == "" {
		return stepOut{next: in.pos, own: styleEnd, why: `has no Link rel="next"`}, nil
	}
	abs, err := resolveURL(in.resp.URL, next)
	if err != nil {
		return stepOut{}, fmt.Errorf("link header next URL: %w", err)
	}
	return stepOut{next: linkAt{URL: in.p.src.CheckpointURL(abs)}, own: goesOn}, nil
}

func (linkPaging) describe(pos At, r *Redactor) string {
	if u := linkOf(pos).URL; u != "" {
		return r.Redact(u)
	}
	return "first page"
}

func (linkPaging) parse(v string) (At, error) {
	if err := ValidURL(v); err != nil {
		return linkAt{}, fmt.Errorf("%q is not a next-page URL: %v", v, err)
	}
	return linkAt{URL: v}, nil
}

// lastBefore: the page at pos is the last when it is to itself (URLs
// compared whatever the order of their query parameters).
func (linkPaging) lastBefore(pos, _, to At) bool {
	t := linkOf(to)
	return t.URL != "" && sameURL(linkOf(pos).URL, t.URL)
}

func (linkPaging) decode(b json.RawMessage) (At, error) { return decodeAt[linkAt](b) }

func (linkPaging) legacy(l legacyAt) (At, bool) { return linkAt{URL: l.URL}, l.URL != "" }
