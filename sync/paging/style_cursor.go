package paging

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/jobfile/spec"
)

// StyleCursor follows a token or URL each page gives for the next one:
// exactly one of pagination.next (a body path of the token, sent in
// pagination.param, default cursor), next_header (a response header of the
// token) or next_url (a body path of the next page's URL).
const StyleCursor = "cursor"

// cursorPaging is the cursor style.
type cursorPaging struct{}

// CursorAt is a cursor style position: the token the page before gave
// (next, next_header), or the next URL it gave (next_url); neither = the
// first page.
//
// Text marks a cursor the API gave as a JSON string whose text starts
// like a JSON list or object ("[\"k\",10]"): a body sends it back as that
// string, where a cursor that was a list or object goes in as JSON
// (docs/pagination.md, "Where the position goes").
type CursorAt struct {
	Cursor string `json:"cursor,omitempty"`
	URL    string `json:"url,omitempty"`
	Text   bool   `json:"text,omitempty"`
}

func (CursorAt) Style() string { return StyleCursor }

func (a CursorAt) loopKey() string {
	switch {
	case a.URL != "":
		return "u:" + a.URL
	case a.Cursor != "":
		return "c:" + a.Cursor
	}
	return ""
}

// cursorOf is pos as a cursor style position (the zero one for another
// style).
func cursorOf(pos At) CursorAt { a, _ := pos.(CursorAt); return a }

func (cursorPaging) Traits() Traits {
	return Traits{name: StyleCursor, uses: []string{"param", "total", "continue", "next", "next_header", "next_url", "in", "template"}, TrustsEnd: true, oneOf: []string{"next", "next_header", "next_url"}, sizeNeedsParam: true}
}

func (cursorPaging) fill(pg *spec.Pagination, bad BadFunc) {
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

func (cursorPaging) Start(spec.Pagination, string) At { return CursorAt{} }

func (cursorPaging) Request(pg spec.Pagination, at At, q url.Values) string {
	pos := cursorOf(at)
	if pos.URL == "" && pos.Cursor != "" {
		q.Set(pg.Param, pos.Cursor)
	}
	return pos.URL
}

func (cursorPaging) Step(in StepIn) (StepOut, error) {
	pg, pos, resp := in.Pg, cursorOf(in.Pos), in.Resp
	var v, where string
	text := false
	switch {
	case pg.Next != "":
		r := gjson.GetBytes(resp.Body, pg.Next)
		v, where = scalar(r), "has no next cursor (at "+pg.Next+")"
		text = r.Type == gjson.String && (strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{"))
	case pg.NextHeader != "":
		v, where = strings.TrimSpace(resp.Header.Get(pg.NextHeader)), "has no "+pg.NextHeader+" header"
	default:
		v, where = scalar(gjson.GetBytes(resp.Body, pg.NextURL)), "has no next URL (at "+pg.NextURL+")"
		if v != "" {
			abs, err := resolveURL(resp.URL, v)
			if err != nil {
				return StepOut{}, fmt.Errorf("next URL at %s: %w", pg.NextURL, err)
			}
			v = in.CheckpointURL(abs)
		}
	}
	if v == "" {
		return StepOut{Next: pos, Own: StyleEnd, Why: where}, nil
	}
	if pg.NextURL == "" && v == pos.Cursor && resp.Raw <= 1 {
		// A keyset API whose filter is inclusive (id >= N) answers the
		// last cursor with the one record it names: nothing after it.
		// More records under the same cursor are a loop (commit refuses it).
		return StepOut{Next: pos, Own: StyleEnd, Why: "gives its own cursor again with no record after it (an inclusive filter at the last record)"}, nil
	}
	if pg.NextURL != "" {
		return StepOut{Next: CursorAt{URL: v}, Own: goesOn}, nil
	}
	return StepOut{Next: CursorAt{Cursor: v, Text: text}, Own: goesOn}, nil
}

func (cursorPaging) describe(at At, r Redacter) string {
	switch pos := cursorOf(at); {
	case pos.URL != "":
		return r.Redact(pos.URL)
	case pos.Cursor != "":
		c := r.Redact(pos.Cursor)
		if strings.ContainsFunc(c, unicode.IsControl) {
			c = strconv.Quote(c) // an API's line break must not start a line of its own in a message
		}
		return "cursor " + c
	}
	return "first page"
}

func (cursorPaging) parse(v string) (At, error) {
	if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
		return CursorAt{URL: v}, nil
	}
	return CursorAt{Cursor: v}, nil
}

// lastBefore: cursors do not compare, so the page at pos is the last when
// it is to itself (URLs compared whatever the order of their query
// parameters).
func (cursorPaging) lastBefore(at, _, to At) bool {
	pos, t := cursorOf(at), cursorOf(to)
	switch {
	case t.URL != "":
		return sameURL(pos.URL, t.URL)
	case t.Cursor != "":
		return pos.Cursor == t.Cursor
	}
	return false
}

func (cursorPaging) decode(b json.RawMessage) (At, error) { return decodeAt[CursorAt](b) }

// legacy: format 1 guessed a position with only a URL as link's.
func (cursorPaging) legacy(l legacyAt) (At, bool) {
	return CursorAt{Cursor: l.Cursor, URL: l.URL}, l.Cursor != ""
}
