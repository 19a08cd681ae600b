package initgen

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/pagesignal"
)

// A parameter name init writes must be one the page shows: the URL's own
// query, or a URL of the body or of a Link header whose query carries the
// value the page gives. A name that only follows a convention is offered
// in a decision, never written (docs/job-file.md, "What init refuses to
// guess").

// shownParam returns the query parameter under which a URL the page shows
// (any URL in the body, or in a Link header) carries value, as sent or
// decoded.
func (p *Page) shownParam(value string) (string, bool) {
	if value == "" {
		return "", false
	}
	var urls []string
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.IsObject() || v.IsArray():
			v.ForEach(func(_, c gjson.Result) bool { walk(c); return true })
		case v.Type == gjson.String && strings.Contains(v.Str, "?"):
			urls = append(urls, v.Str)
		}
	}
	walk(p.body)
	for _, m := range linkURL.FindAllStringSubmatch(strings.Join(p.header.Values("Link"), ","), -1) {
		urls = append(urls, m[1])
	}
	for _, u := range urls {
		_, query, _ := strings.Cut(u, "?")
		query, _, _ = strings.Cut(query, "#")
		for _, pair := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(pair, "=")
			dk, err1 := url.QueryUnescape(k)
			dv, err2 := url.QueryUnescape(v)
			if k != "" && (v == value || err1 == nil && err2 == nil && dv == value) {
				if err1 != nil {
					dk = k
				}
				return dk, true
			}
		}
	}
	return "", false
}

var linkURL = regexp.MustCompile(`<([^>]*)>`)

// takeParam sets pagination.param to the parameter that takes the
// position at where (value on the first page): the URL's own query
// parameter of one of the convention's names, else the parameter a URL
// of the page carries value under; else param is left to decide, the
// convention's first name offered.
func (p *Page) takeParam(pg *pagination, where, value string, convention ...string) {
	if qk, _, ok := p.queryParam(convention...); ok {
		pg.set("param", qk, "")
		pg.owned = append(pg.owned, qk)
		return
	}
	if k, ok := p.shownParam(value); ok {
		pg.set("param", k, "a URL of the page sends the value under "+k)
		pg.owned = append(pg.owned, k)
		return
	}
	q := fmt.Sprintf("which query parameter takes %s, %s on the first page? The page shows none", where, cut(value))
	offer := ""
	if len(convention) > 0 {
		offer = convention[0]
		q += "; by convention " + offer
	}
	pg.leave("param", offer, q)
}

// cut is a value as the file's questions quote it: fit for a comment
// (commentText), cut at 40 bytes on a character's start.
func cut(s string) string {
	return cutText(commentText(s), 40)
}

// bodySizeField is a page size the body reports (per_page, page_size,
// limit, maxResults).
func bodySizeField(p *Page) (pagesignal.Field, bool) {
	f, ok := pagesignal.Find(p.body, pagesignal.In("perpage", "pagesize", "limit", "size", "maxresults"), pagesignal.IsNumber)
	return f, ok && f.Val.Int() > 0
}

// walkSize sets the page size a walk needs (offset, hwm): from the URL's
// query; else the size the body reports, the parameter that takes it
// left to decide; else both left to decide.
func walkSize(p *Page, pg *pagination) {
	if p.sizeParam(pg) {
		return
	}
	if f, ok := bodySizeField(p); ok {
		pg.leave("size_param", f.Key(), fmt.Sprintf("which query parameter takes the page size (the body reports %s: %d)? The URL sends none", f.Path, f.Val.Int()))
		pg.set("size", fmt.Sprint(f.Val.Int()), "the page size the body reports")
		return
	}
	pg.leave("size_param", "", "which query parameter takes the page size, and pagination.size: how many records does a full page hold? The URL sends no size and the body reports none")
}

// pageSizeHint writes, for a page walk, the page size the body reports
// as a commented option: a page walk needs no size (the API's own
// applies), and the parameter that would set it is not shown.
func pageSizeHint(p *Page, pg *pagination) {
	if p.sizeParam(pg) {
		return
	}
	if f, ok := bodySizeField(p); ok {
		pg.settings = append(pg.settings, setting{key: "size_param", value: f.Key(), open: true,
			note: fmt.Sprintf("optional: the body reports %s: %d; set size_param and size only if the API reads that parameter", f.Path, f.Val.Int())})
	}
}
