package sync

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
)

// StyleCursor follows a token or URL each page gives for the next one:
// exactly one of pagination.next (a body path of the token, sent in
// pagination.param, default cursor), next_header (a response header of the
// token) or next_url (a body path of the next page's URL).
const StyleCursor = "cursor"

// cursorPaging is the cursor style.
type cursorPaging struct{}

func (cursorPaging) traits() styleTraits {
	return styleTraits{name: StyleCursor, uses: []string{"param", "total", "continue", "next", "next_header", "next_url", "in", "template"}, trustsEnd: true, oneOf: []string{"next", "next_header", "next_url"}, sizeNeedsParam: true}
}

func (cursorPaging) fill(pg *Pagination, bad badFunc) {
	setParam(pg, "cursor")
	n := 0
	for _, s := range []string{pg.Next, pg.NextHeader, pg.NextURL} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		bad("pagination", "style cursor needs exactly one of next, next_header or next_url")
	}
	sizeNeedsParam(pg, bad)
}

func (cursorPaging) start(Pagination, string) Position { return Position{} }

func (cursorPaging) request(pg Pagination, pos Position, q url.Values) string {
	if pos.URL == "" && pos.Cursor != "" {
		q.Set(pg.Param, pos.Cursor)
	}
	return pos.URL
}

func (cursorPaging) step(p *pager, pos Position, resp *contract.Response, _ string, _ ownEnd, _ string) (Position, ownEnd, string, error) {
	pg := p.job.Pagination
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
	if pg.NextURL == "" && v == pos.Cursor && resp.Raw <= 1 {
		// A keyset API whose filter is inclusive (id >= N) answers the
		// last cursor with the one record it names: nothing after it.
		// More records under the same cursor are a loop (commit refuses it).
		return pos, styleEnd, "gives its own cursor again with no record after it (an inclusive filter at the last record)", nil
	}
	if pg.NextURL != "" {
		return Position{URL: v}, goesOn, "", nil
	}
	return Position{Cursor: v}, goesOn, "", nil
}

func (cursorPaging) describe(pos Position, r *Redactor) string {
	switch {
	case pos.URL != "":
		return r.Redact(pos.URL)
	case pos.Cursor != "":
		return "cursor " + r.Redact(pos.Cursor)
	}
	return "first page"
}

func (cursorPaging) parse(v string) (Position, error) {
	if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
		return Position{URL: v}, nil
	}
	return Position{Cursor: v}, nil
}

func (cursorPaging) lastBefore(pos, _, to Position) bool { return sameAt(pos, to) }

func (cursorPaging) holds(pos Position) bool { return pos.Cursor != "" }
