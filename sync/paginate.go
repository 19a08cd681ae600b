package sync

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
)

// pager knows one pagination style: which URL a position requests, and
// which position follows a fetched page.
type pager struct {
	job *Job
	src contract.PageSource
	log *slog.Logger // warnings about the walk
}

// style is the job's pagination style.
func (p *pager) style() pagingStyle { return styleOf(p.job.Pagination.Style) }

// start returns the position of a new run's first page. mark is the hwm
// style's starting mark (saved mark minus overlap, or initial).
func (p *pager) start(mark string) Position {
	return Position{At: p.style().start(p.job.Pagination, mark)}
}

// ownEnd is what a page's own pagination style says about the end.
type ownEnd int

const (
	// goesOn: the style goes on after this page.
	goesOn ownEnd = iota
	// shortEnd: a short, non-empty page (page, offset, hwm): the end,
	// unless the API caps its pages below pagination.size.
	shortEnd
	// styleEnd: the style's own end: an empty page, no next cursor, URL
	// or link, a page that makes no progress (hwm), the one page of none.
	styleEnd
	// cappedTie: a full hwm page that made no progress under a page-size
	// cap idemsync adopted (decideEnd asks again at pagination.size).
	cappedTie
)

// size is the page size the API serves at pos: the size it was found to
// cap pages at, else pagination.size (0 when unknown).
func (p *pager) size(pos Position) int {
	if n := pos.size(); n > 0 {
		return n
	}
	return p.job.Pagination.Size
}

// stepIn is what a style's step sees of the page it fetched.
type stepIn struct {
	p    *pager
	pos  At                 // the page's position
	resp *contract.Response // the page
	// size is the page size the API serves at pos (pager.size).
	size int
	// hwmMax is the highest mark among the page's records (hwm style).
	hwmMax string
	// own and why are the verdict of the page's record count: goesOn,
	// or the end of an empty or a short page and why.
	own ownEnd
	why string
}

// stepOut is what a style decided about the page: the position after it
// (pos itself when the style ends there), whether the style would end
// there and, when it would, why ("has no next cursor (at meta.next)").
type stepOut struct {
	next At
	own  ownEnd
	why  string
}

// step returns what the style alone says of the page fetched at pos: the
// position after it and whether it would end there (stepOut). hwmMax is
// the highest mark among the page's records (hwm style). It returns an
// error for a page that can neither end nor progress. The end decision
// (decideEnd) weighs this against every other signal.
func (p *pager) step(pos Position, resp *contract.Response, hwmMax string) (stepOut, error) {
	pg := p.job.Pagination
	in := stepIn{p: p, pos: pos.At, resp: resp, size: p.size(pos), hwmMax: hwmMax}
	switch n := resp.Raw; {
	case n == 0:
		in.own, in.why = styleEnd, "is empty"
	case in.size > 0 && n < in.size:
		in.own, in.why = shortEnd, fmt.Sprintf("is short (%d of %d records)", n, in.size)
	}
	if !knownStyle(pg.Style) {
		return stepOut{}, fmt.Errorf("unknown pagination style %q", pg.Style)
	}
	return p.style().step(in)
}

// scalar returns a JSON value as a cursor string: "" for missing, null,
// false or empty.
func scalar(v gjson.Result) string {
	switch v.Type {
	case gjson.Null, gjson.False:
		return ""
	case gjson.String:
		return v.Str
	case gjson.Number:
		return v.Raw
	}
	if !v.Exists() {
		return ""
	}
	return v.Raw
}

func resolveURL(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return "", fmt.Errorf("invalid URL")
	}
	u := b.ResolveReference(r)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	return u.String(), nil
}

// NextLink returns the target of the rel="next" link in RFC 8288 Link header
// values, or "". It accepts several links per header and several headers,
// quoted and unquoted rel values, and rel lists ("next last").
func NextLink(values []string) string {
	for _, h := range values {
		for _, link := range splitLinks(h) {
			link = strings.TrimSpace(link)
			if !strings.HasPrefix(link, "<") {
				continue
			}
			end := strings.IndexByte(link, '>')
			if end < 0 {
				continue
			}
			target := link[1:end]
			for _, param := range strings.Split(link[end+1:], ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(param), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
					continue
				}
				v = strings.Trim(strings.TrimSpace(v), `"`)
				for _, rel := range strings.Fields(v) {
					if strings.EqualFold(rel, "next") {
						return target
					}
				}
			}
		}
	}
	return ""
}

// splitLinks splits a Link header on the commas between links, not those
// inside <...> or quotes.
func splitLinks(h string) []string {
	var out []string
	inURL, inQuote, startAt := false, false, 0
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c == '<' && !inQuote:
			inURL = true
		case c == '>' && !inQuote:
			inURL = false
		case c == '"' && !inURL:
			inQuote = !inQuote
		case c == ',' && !inURL && !inQuote:
			out = append(out, h[startAt:i])
			startAt = i + 1
		}
	}
	return append(out, h[startAt:])
}

var _ = http.StatusOK
