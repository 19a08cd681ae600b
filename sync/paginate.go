package sync

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// pager knows one pagination style: which URL a position requests, and
// which position follows a fetched page.
type pager struct {
	job *Job
	src PageSource
	log *slog.Logger // warnings about the walk
}

// start returns the position of a new run's first page. mark is the hwm
// style's starting mark (saved mark minus overlap, or initial).
func (p *pager) start(mark string) Position {
	pg := p.job.Pagination
	switch pg.Style {
	case StylePage:
		return Position{Page: *pg.Start}
	case StyleHWM:
		return Position{Mark: mark}
	}
	return Position{}
}

// url returns the request URL for the page at pos; window is the
// incremental mark of the run ("" when none).
func (p *pager) url(pos Position, window string) (string, error) {
	pg := p.job.Pagination
	params := url.Values{}
	if inc := p.job.Incremental; inc != nil && window != "" {
		w, err := FormatMark(window, inc.Format)
		if err != nil {
			return "", err
		}
		params.Set(inc.Param, w)
	}
	if size := p.size(pos); size > 0 && pg.SizeParam != "" {
		params.Set(pg.SizeParam, strconv.Itoa(size)) // the size the API serves, once a cap was seen
	}
	base, isNext := p.job.Source.URL, false
	switch pg.Style {
	case StylePage:
		params.Set(pg.Param, strconv.FormatInt(pos.Page, 10))
	case StyleOffset:
		params.Set(pg.Param, strconv.FormatInt(pos.Offset, 10))
	case StyleCursor:
		switch {
		case pos.URL != "":
			base, isNext = pos.URL, true
		case pos.Cursor != "":
			params.Set(pg.Param, pos.Cursor)
		}
	case StyleLink:
		if pos.URL != "" {
			base, isNext = pos.URL, true
		}
	case StyleHWM:
		if pos.Mark != "" {
			params.Set(pg.Param, pos.Mark)
		}
	}
	return p.src.BuildURL(base, params, isNext)
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
	if pos.Size > 0 {
		return pos.Size
	}
	return p.job.Pagination.Size
}

// step returns the position after the page fetched at pos as the style
// alone sees it, whether the style would end there and, when it would, why
// ("is empty", "has no next cursor (at meta.next)"). hwmMax is the highest
// mark among the page's records (hwm style). It returns an error for a page
// that can neither end nor progress. The end decision (decideEnd) weighs
// this against every other signal.
func (p *pager) step(pos Position, resp *Response, hwmMax string) (Position, ownEnd, string, error) {
	pg := p.job.Pagination
	n, size := resp.Raw, p.size(pos)
	own, why := goesOn, ""
	switch {
	case n == 0:
		own, why = styleEnd, "is empty"
	case size > 0 && n < size:
		own, why = shortEnd, fmt.Sprintf("is short (%d of %d records)", n, size)
	}
	switch pg.Style {
	case StyleNone:
		return pos, styleEnd, "is the only page", nil
	case StylePage:
		return Position{Page: pos.Page + 1, Size: pos.Size}, own, why, nil
	case StyleOffset:
		return Position{Offset: pos.Offset + int64(n), Size: pos.Size}, own, why, nil
	case StyleCursor:
		var v, where string
		switch {
		case pg.Next != "":
			v, where = scalar(gjson.GetBytes(resp.Body, pg.Next)), "has no next cursor (at "+pg.Next+")"
		case pg.NextHeader != "":
			v, where = strings.TrimSpace(resp.Header.Get(pg.NextHeader)), "has no "+pg.NextHeader+" header"
		default:
			v, where = scalar(gjson.GetBytes(resp.Body, pg.NextURL)), "has no next URL (at "+pg.NextURL+")"
			if v != "" {
				abs, err := resolveURL(resp.URL, v)
				if err != nil {
					return Position{}, 0, "", fmt.Errorf("next URL at %s: %w", pg.NextURL, err)
				}
				v = p.src.CheckpointURL(abs)
			}
		}
		if v == "" {
			return pos, styleEnd, where, nil
		}
		if pg.NextURL != "" {
			return Position{URL: v}, goesOn, "", nil
		}
		return Position{Cursor: v}, goesOn, "", nil
	case StyleLink:
		next := NextLink(resp.Header.Values("Link"))
		if next == "" {
			return pos, styleEnd, `has no Link rel="next"`, nil
		}
		abs, err := resolveURL(resp.URL, next)
		if err != nil {
			return Position{}, 0, "", fmt.Errorf("link header next URL: %w", err)
		}
		return Position{URL: p.src.CheckpointURL(abs)}, goesOn, "", nil
	case StyleHWM:
		if n > 0 && CompareMarks(hwmMax, pos.Mark) <= 0 {
			if pos.Size > 0 && pos.Size < pg.Size && n >= size {
				return pos, cappedTie, "", nil // decideEnd asks again at pagination.size
			}
			if size > 0 && n >= size {
				return Position{}, 0, "", &Error{Code: ExitPermanent,
					Msg:  fmt.Sprintf("a full page of %d records made no progress past mark %s", n, pos.Mark),
					Hint: "more than pagination.size records share one mark: raise pagination.size"}
			}
			return pos, styleEnd, fmt.Sprintf("makes no progress (%d of %d records)", n, size), nil
		}
		return Position{Mark: hwmMax, Size: pos.Size}, own, why, nil
	}
	return Position{}, 0, "", fmt.Errorf("unknown pagination style %q", pg.Style)
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
