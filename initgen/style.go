package initgen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/pagesignal"
	"github.com/idemsync/idemsync/sync/paging"
)

// setting is one key of the generated pagination block, with an optional
// comment printed after it. An open setting is written commented out
// (with the value offered, if any): a decision left to the user, or an
// option.
type setting struct {
	key, value, note string
	open             bool
}

// pagination is the detected pagination: its style, its keys in the order
// they are written, why it was chosen, the query parameters the engine
// sets itself (removed from source.url), and the decisions left to the
// user (the file's decide list: validate and run refuse the file until
// they are made).
type pagination struct {
	style    string
	settings []setting
	why      string
	owned    []string
	decide   []string
}

func (p *pagination) set(key, value, note string) {
	p.settings = append(p.settings, setting{key: key, value: value, note: note})
}

// leave writes key commented out, with the value offered (if any) and
// the question it leaves, and adds the decision to the file's decide
// list.
func (p *pagination) leave(key, offer, question string) {
	p.settings = append(p.settings, setting{key: key, value: offer, note: "decide: " + question, open: true})
	p.decide = append(p.decide, "pagination."+key+": "+question)
}

// pageNames are the names of a page number in a body.
var pageNames = pagesignal.In("page", "currentpage", "pagenumber", "pagenum", "pageindex")

// detectPagination picks the pagination style from the first page's
// signals, strongest first: a Link header, a next-cursor header, a next
// URL, a next token, cursor or id in the body, a has_more flag with record
// ids (Stripe), page numbers, offsets, a since-style query parameter
// (hwm). When none of these fits but the page shows the list goes on
// (pagesignal.More), the style is left to decide; none only when the page
// shows no sign of more (docs/job-file.md, "Starting from idemsync init").
func detectPagination(p *Page, records string, recs []gjson.Result) *pagination {
	pg := &pagination{}
	if linkNext.MatchString(strings.Join(p.header.Values("Link"), ",")) {
		pg.style, pg.why = paging.StyleLink, `the response has a Link header with rel="next"`
		p.sizeParam(pg)
		return pg
	}
	for k := range p.header {
		if n := normKey(k); strings.Contains(n, "nextcursor") || strings.Contains(n, "nextpagetoken") || n == "xnexttoken" {
			pg.style, pg.why = paging.StyleCursor, "the response has a "+k+" header"
			p.takeParam(pg, "the "+k+" header", p.header.Get(k), "cursor")
			pg.set("next_header", k, "")
			p.sizeParam(pg)
			return pg
		}
	}
	if f, ok := pagesignal.Find(p.body, pagesignal.IsNext, pagesignal.IsURL); ok {
		pg.style, pg.why = paging.StyleCursor, "the body holds the next page's URL at "+f.Path
		pg.set("next_url", f.Path, "")
		p.sizeParam(pg)
		return pg
	}
	if f, ok := pagesignal.Find(p.body, pagesignal.IsNext, func(v gjson.Result) bool { return pagesignal.IsURL(v.Get("href")) }); ok {
		pg.style, pg.why = paging.StyleCursor, "the body holds the next page's URL at "+f.Path+".href"
		pg.set("next_url", f.Path+".href", "")
		p.sizeParam(pg)
		return pg
	}
	isToken := func(n string) bool { return pagesignal.IsNext(n) || pagesignal.IsToken(n) }
	if f, ok := pagesignal.Find(p.body, isToken, tokenValue); ok {
		nextCursor(p, pg, f, "the body holds the next cursor at "+f.Path)
		return pg
	}
	if f, ok := pagesignal.Find(p.body, pagesignal.IsNext, pagesignal.IsNumber); ok {
		nextNumber(p, pg, f)
		return pg
	}
	more, hasMore := pagesignal.Find(p.body, pagesignal.HasMore, pagesignal.IsBool)
	page, hasPage := pagesignal.Find(p.body, pageNames, pagesignal.IsNumber)
	if qk, _, ok := p.queryParam("page", "page_number", "pageNumber"); ok && !hasPage {
		page, hasPage = pagesignal.Field{Path: qk}, true
	}
	if hasMore && !hasPage && records != "" && allHave(recs, "id") {
		pg.style, pg.why = paging.StyleCursor, "the body has "+more.Path+" and no page number: the next page starts after the last record's id (Stripe's lists)"
		p.takeParam(pg, "the last record's id (the body has "+more.Path+" and no page number)", recs[len(recs)-1].Get("id").String(), "starting_after")
		pg.set("next", records+".@reverse.0.id", "the id of the page's last record")
		pg.set("has_more", more.Path, "")
		pg.owned = append(pg.owned, "starting_after")
		p.sizeParam(pg)
		return pg
	}
	if hasPage {
		detectPages(p, pg, page, more, hasMore)
		return pg
	}
	if detectOffset(p, pg) || detectHWM(p, pg, recs) {
		return pg
	}
	pg.style = paging.StyleNone
	if signs := pagesignal.More(p.body, p.url.Query(), len(recs)); len(signs) > 0 {
		says := make([]string, len(signs))
		for i, s := range signs {
			says[i] = s.String()
		}
		pg.why = "the first page shows the list goes on (" + strings.Join(says, "; ") + ") but not how the next page is asked for"
		pg.decide = append(pg.decide, "pagination.style: "+pg.why+": choose the style and its keys (docs/pagination.md); style none would copy the first page only")
		return pg
	}
	pg.why = "no sign of more on the first page (no Link header, next URL, cursor or id, has-more or done flag, total above the page, page number, offset, since parameter, or page as full as its size parameter): the whole list is one request"
	return pg
}

// tokenValue accepts a next token: text that is not a URL nor a number
// written as text (an offset or start given as "40").
func tokenValue(v gjson.Result) bool {
	if !pagesignal.IsTokenValue(v) {
		return false
	}
	_, err := strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64)
	return err != nil
}

// nextCursor fills in the cursor style for a next position at f: the
// query parameter that takes it is one the page shows (takeParam), else a
// decision left to the user, offering the convention for the field's
// name when there is one.
func nextCursor(p *Page, pg *pagination, f pagesignal.Field, why string) {
	pg.style, pg.why = paging.StyleCursor, why
	var conv []string
	if param, ok := cursorParam(f.Key()); ok {
		conv = []string{param}
	}
	p.takeParam(pg, f.Path, f.Val.String(), conv...)
	pg.set("next", f.Path, "")
	p.sizeParam(pg)
}

// nextNumber fills in the style a number at a next field f says: the next
// page's number (page), the next offset (offset), else a cursor (next_id:
// the next page starts at that id).
func nextNumber(p *Page, pg *pagination, f pagesignal.Field) {
	switch n := normKey(f.Key()); {
	case strings.Contains(n, "page"):
		pg.style, pg.why = paging.StylePage, "the body gives the next page's number at "+f.Path
		if qk, _, ok := p.queryParam("page", "page_number", "pageNumber"); ok {
			pg.set("param", qk, "")
			pg.owned = append(pg.owned, qk)
		} else {
			pg.leave("param", "page", fmt.Sprintf("which query parameter takes the page number (%s is %s on the first page)? The URL sends none", f.Path, f.Val.Raw))
		}
		pageSizeHint(p, pg)
	case strings.Contains(n, "offset") || strings.Contains(n, "start") || strings.Contains(n, "skip"):
		pg.style, pg.why = paging.StyleOffset, "the body gives the next offset at "+f.Path
		if qk, _, ok := p.queryParam("offset", "skip", "start", "startAt"); ok {
			pg.set("param", qk, "")
			pg.owned = append(pg.owned, qk)
		} else {
			pg.leave("param", "offset", fmt.Sprintf("which query parameter takes the offset (%s is %s on the first page)? The URL sends none", f.Path, f.Val.Raw))
		}
		walkSize(p, pg)
	default:
		nextCursor(p, pg, f, "the body holds the next page's position at "+f.Path)
	}
}

// cursorParam is the query parameter an API reads a cursor found under
// key from, by the conventions of the well-known APIs, offered in the
// decision when the page does not show it: next_cursor →
// cursor (Slack), nextPageToken → pageToken (Google), endCursor → after
// (GraphQL), NextMarker → marker (S3), and a token under its own name
// (after, starting_after, cursor, offset as Airtable's, continue as
// Kubernetes', bookmark as CouchDB's). A name without one convention has
// none: next_id, next, next_token (AWS sends NextToken back as it is,
// Twitter as pagination_token), scroll_id (Elasticsearch: in a body).
func cursorParam(key string) (string, bool) {
	switch n := normKey(key); {
	case n == "nextcursor":
		return "cursor", true
	case n == "nextpagetoken":
		if strings.ContainsAny(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			return "pageToken", true
		}
		return "page_token", true
	case n == "endcursor":
		return "after", true
	case n == "nextmarker":
		return "marker", true
	case pagesignal.In("after", "startingafter", "cursor", "offset", "start", "continue", "marker", "pagetoken", "bookmark")(n):
		return key, true
	}
	return "", false
}

// allHave reports whether every record has a scalar at key.
func allHave(recs []gjson.Result, key string) bool {
	for _, r := range recs {
		if v := r.Get(escapePath(key)); !v.Exists() || v.IsObject() || v.IsArray() || v.Type == gjson.Null {
			return false
		}
	}
	return len(recs) > 0
}

// detectPages fills in the page style from a page number in the body or
// the query, a total page count or has_more flag, and a page size.
func detectPages(p *Page, pg *pagination, page, more pagesignal.Field, hasMore bool) {
	pg.style = paging.StylePage
	pg.why = "the page is numbered (" + page.Path + ")"
	if qk, _, ok := p.queryParam("page", "page_number", "pageNumber", page.Key()); ok {
		pg.set("param", qk, "")
		pg.owned = append(pg.owned, qk)
	} else {
		pg.leave("param", "page", fmt.Sprintf("which query parameter takes the page number (the body gives it at %s, %s on the first page)? The URL sends none", page.Path, page.Val.Raw))
	}
	if page.Val.Exists() && page.Val.Int() == 0 {
		pg.set("start", "0", "the first page is number 0")
	}
	pageSizeHint(p, pg)
	if f, ok := pagesignal.Find(p.body, pagesignal.PageCount, pagesignal.IsNumber); ok {
		pg.set("total_pages", f.Path, "")
		pg.why += "; the body tells the number of pages"
	} else if hasMore {
		pg.set("has_more", more.Path, "")
	}
}

// detectOffset fills in the offset style from an offset in the body or
// the query; it reports false when there is none.
func detectOffset(p *Page, pg *pagination) bool {
	param, _, inQuery := p.queryParam("offset", "skip", "startAt", "start")
	f, inBody := pagesignal.Find(p.body, pagesignal.In("offset", "skip", "startat", "start"), pagesignal.IsNumber)
	if !inQuery && !inBody {
		return false
	}
	if inQuery {
		pg.style, pg.why = paging.StyleOffset, "the request carries an offset ("+param+")"
		pg.set("param", param, "")
		pg.owned = append(pg.owned, param)
	} else {
		pg.style, pg.why = paging.StyleOffset, "the body carries an offset ("+f.Path+")"
		pg.leave("param", f.Key(), fmt.Sprintf("which query parameter takes the offset (the body gives it at %s, %s on the first page)? The URL sends none", f.Path, f.Val.Raw))
	}
	walkSize(p, pg)
	if t, ok := pagesignal.Find(p.body, pagesignal.Total, pagesignal.IsNumber); ok {
		pg.set("total", t.Path, "")
	}
	return true
}

// detectHWM fills in the hwm style when the URL's query filters by a
// change time (since=…) and the records carry one; false otherwise.
func detectHWM(p *Page, pg *pagination, recs []gjson.Result) bool {
	param, _, ok := p.queryParam("since", "updated_since", "updated_after", "modified_since", "changed_since", "updatedSince", "updatedAfter")
	if !ok {
		return false
	}
	mark := ""
	for _, k := range []string{"updated_at", "updatedAt", "modified_at", "modifiedAt", "last_modified", "lastModified", "updated", "modified"} {
		if allHave(recs, k) {
			mark = k
			break
		}
	}
	if mark == "" {
		return false
	}
	pg.style, pg.why = paging.StyleHWM, "the request filters by "+param+" and the records carry "+mark
	pg.set("field", escapePath(mark), "")
	pg.set("param", param, "")
	pg.owned = append(pg.owned, param)
	walkSize(p, pg)
	return true
}
