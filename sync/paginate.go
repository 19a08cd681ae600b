package sync

import (
	"fmt"
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
	f   *Fetcher
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
		params.Set(inc.Param, window)
	}
	if pg.Size > 0 && pg.SizeParam != "" {
		params.Set(pg.SizeParam, strconv.Itoa(pg.Size))
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
	return p.f.BuildURL(base, params, isNext)
}

// next returns the position after the page fetched at pos, with End set when
// pagination is over. hwmMax is the highest mark among the page's records
// (hwm style). It returns an error for a page that cannot end nor progress.
func (p *pager) next(pos Position, resp *Response, hwmMax string) (Position, error) {
	pg := p.job.Pagination
	n := len(resp.Records)
	body := gjson.ParseBytes(resp.Body)
	// has_more, when present, decides: false ends, true forbids ending on
	// an empty page.
	hasMore, hasMoreSet := false, false
	if pg.HasMore != "" {
		if v := body.Get(pg.HasMore); v.Exists() && v.Type != gjson.Null {
			hasMore, hasMoreSet = v.Bool(), true
		}
	}
	end := func(next Position, ended bool) (Position, error) {
		if hasMoreSet {
			if !hasMore {
				ended = true
			} else if ended && n == 0 {
				return Position{}, fmt.Errorf("empty page but %s says there are more records", pg.HasMore)
			}
		}
		if ended {
			pos.End = true
			return pos, nil
		}
		return next, nil
	}
	short := pg.Size > 0 && n < pg.Size
	switch pg.Style {
	case StyleNone:
		return end(pos, true)
	case StylePage:
		ended := n == 0 || short
		if pg.TotalPages != "" {
			if v := body.Get(pg.TotalPages); v.Exists() && v.Type == gjson.Number {
				last := v.Int() + *pg.Start - 1
				ended = ended || pos.Page >= last
			}
		}
		return end(Position{Page: pos.Page + 1}, ended)
	case StyleOffset:
		step := int64(pg.Size)
		return end(Position{Offset: pos.Offset + step}, n == 0 || short)
	case StyleCursor:
		var v string
		switch {
		case pg.Next != "":
			v = scalar(body.Get(pg.Next))
			return end(Position{Cursor: v}, v == "")
		case pg.NextHeader != "":
			v = strings.TrimSpace(resp.Header.Get(pg.NextHeader))
			return end(Position{Cursor: v}, v == "")
		default:
			v = scalar(body.Get(pg.NextURL))
			if v != "" {
				abs, err := resolveURL(resp.URL, v)
				if err != nil {
					return Position{}, fmt.Errorf("next URL at %s: %w", pg.NextURL, err)
				}
				v = p.f.CheckpointURL(abs)
			}
			return end(Position{URL: v}, v == "")
		}
	case StyleLink:
		next := NextLink(resp.Header.Values("Link"))
		if next != "" {
			abs, err := resolveURL(resp.URL, next)
			if err != nil {
				return Position{}, fmt.Errorf("link header next URL: %w", err)
			}
			next = p.f.CheckpointURL(abs)
		}
		return end(Position{URL: next}, next == "")
	case StyleHWM:
		if n == 0 {
			return end(pos, true)
		}
		if CompareMarks(hwmMax, pos.Mark) <= 0 {
			if pg.Size > 0 && n >= pg.Size {
				return Position{}, &Error{Code: ExitPermanent,
					Msg:  fmt.Sprintf("a full page of %d records made no progress past mark %s", n, pos.Mark),
					Hint: "more than pagination.size records share one mark: raise pagination.size"}
			}
			return end(pos, true)
		}
		return end(Position{Mark: hwmMax}, short)
	}
	return Position{}, fmt.Errorf("unknown pagination style %q", pg.Style)
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
