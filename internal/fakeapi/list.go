package fakeapi

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Response bodies of the list routes. Data is never nil, so it encodes as [].
type (
	pageBody struct {
		Data []Record `json:"data"`
		Meta pageMeta `json:"meta"`
	}
	pageMeta struct {
		Page       int  `json:"page"`
		PerPage    int  `json:"per_page"`
		Total      int  `json:"total"`
		TotalPages int  `json:"total_pages"`
		HasMore    bool `json:"has_more"`
	}
	offsetBody struct {
		Data  []Record `json:"data"`
		Total int      `json:"total"`
	}
	cursorBody struct {
		Data       []Record `json:"data"`
		NextCursor *string  `json:"next_cursor"`
	}
	cursorURLBody struct {
		Data  []Record `json:"data"`
		Links struct {
			Next *string `json:"next"`
		} `json:"links"`
	}
	dataBody struct {
		Data []Record `json:"data"`
	}
)

// numbered is one page of a page-numbered route.
type numbered struct {
	data                       []Record
	page, per, total, lastPage int
}

// numberedPage reads page and per_page and returns that page, ordered by id.
func (a *API) numberedPage(r *http.Request) (numbered, *response) {
	q := r.URL.Query()
	page, bad := intParam(q, "page", 1, 1, 1<<30)
	if bad != nil {
		return numbered{}, bad
	}
	per, bad := a.sizeParam(q, "per_page")
	if bad != nil {
		return numbered{}, bad
	}
	since, bad := timeParam(q, "updated_since")
	if bad != nil {
		return numbered{}, bad
	}
	a.mu.RLock()
	sel := a.byID(since)
	n := numbered{page: page, per: per, total: sel.len()}
	from := n.total // past the end, also when (page-1)*per would overflow
	if page-1 <= n.total/per {
		from = (page - 1) * per
	}
	n.data = sel.window(from, per)
	a.mu.RUnlock()
	n.lastPage = (n.total + per - 1) / per
	return n, nil
}

func (a *API) servePage(r *http.Request) *response {
	n, bad := a.numberedPage(r)
	if bad != nil {
		return bad
	}
	return jsonResponse(http.StatusOK, pageBody{Data: n.data, Meta: pageMeta{
		Page: n.page, PerPage: n.per, Total: n.total, TotalPages: n.lastPage,
		HasMore: n.page < n.lastPage,
	}})
}

// serveLink answers a bare array with a GitHub-style Link header holding
// first, prev (after page 1), next (before the last page) and last.
func (a *API) serveLink(r *http.Request) *response {
	n, bad := a.numberedPage(r)
	if bad != nil {
		return bad
	}
	abs := r.URL.Query().Get("relative") != "1"
	link := func(page int, rel string) string {
		u := linkTo(r, abs, map[string]string{"page": strconv.Itoa(page), "per_page": strconv.Itoa(n.per)})
		return fmt.Sprintf("<%s>; rel=%q", u, rel)
	}
	last := max(n.lastPage, 1)
	parts := []string{link(1, "first")}
	if n.page > 1 {
		parts = append(parts, link(min(n.page-1, last), "prev"))
	}
	if n.page < n.lastPage {
		parts = append(parts, link(n.page+1, "next"))
	}
	parts = append(parts, link(last, "last"))
	resp := jsonResponse(http.StatusOK, n.data)
	resp.header.Set("Link", strings.Join(parts, ", "))
	return resp
}

func (a *API) serveOffset(r *http.Request) *response {
	q := r.URL.Query()
	offset, bad := intParam(q, "offset", 0, 0, math.MaxInt32)
	if bad != nil {
		return bad
	}
	limit, bad := a.sizeParam(q, "limit")
	if bad != nil {
		return bad
	}
	since, bad := timeParam(q, "updated_since")
	if bad != nil {
		return bad
	}
	a.mu.RLock()
	sel := a.byID(since)
	body := offsetBody{Data: sel.window(offset, limit), Total: sel.len()}
	a.mu.RUnlock()
	return jsonResponse(http.StatusOK, body)
}

// cursorPage reads cursor and limit and returns the records after the
// cursor's id, and the cursor of the next page ("" at the end).
func (a *API) cursorPage(r *http.Request) (data []Record, limit int, next string, bad *response) {
	q := r.URL.Query()
	lastID := 0
	if c := q.Get("cursor"); c != "" {
		id, err := decodeCursor(c)
		if err != nil {
			return nil, 0, "", badRequest("invalid cursor %q", c)
		}
		lastID = id
	}
	if limit, bad = a.sizeParam(q, "limit"); bad != nil {
		return nil, 0, "", bad
	}
	since, bad := timeParam(q, "updated_since")
	if bad != nil {
		return nil, 0, "", bad
	}
	a.mu.RLock()
	sel := a.byID(since)
	from := sel.after(lastID)
	data = sel.window(from, limit)
	more := from+len(data) < sel.len()
	a.mu.RUnlock()
	if more {
		next = encodeCursor(data[len(data)-1].ID)
	}
	return data, limit, next, nil
}

// encodeCursor returns the opaque cursor meaning "after id".
func encodeCursor(id int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("id:" + strconv.Itoa(id)))
}

func decodeCursor(c string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(string(b), "id:")
	if !ok {
		return 0, fmt.Errorf("no id prefix")
	}
	id, err := strconv.Atoi(s)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("bad id %q", s)
	}
	return id, nil
}

func (a *API) serveCursor(r *http.Request) *response {
	data, _, next, bad := a.cursorPage(r)
	if bad != nil {
		return bad
	}
	body := cursorBody{Data: data}
	if next != "" {
		body.NextCursor = &next
	}
	return jsonResponse(http.StatusOK, body)
}

func (a *API) serveCursorURL(r *http.Request) *response {
	data, limit, next, bad := a.cursorPage(r)
	if bad != nil {
		return bad
	}
	body := cursorURLBody{Data: data}
	if next != "" {
		u := linkTo(r, true, map[string]string{"cursor": next, "limit": strconv.Itoa(limit)})
		body.Links.Next = &u
	}
	return jsonResponse(http.StatusOK, body)
}

func (a *API) serveCursorHeader(r *http.Request) *response {
	data, _, next, bad := a.cursorPage(r)
	if bad != nil {
		return bad
	}
	resp := jsonResponse(http.StatusOK, data)
	if next != "" {
		resp.header.Set("X-Next-Cursor", next)
	}
	return resp
}

// serveHWM returns up to limit records with updated_at >= max(since,
// updated_since), ascending by (updated_at, id).
func (a *API) serveHWM(r *http.Request) *response {
	q := r.URL.Query()
	since, bad := timeParam(q, "since")
	if bad != nil {
		return bad
	}
	us, bad := timeParam(q, "updated_since")
	if bad != nil {
		return bad
	}
	limit, bad := a.sizeParam(q, "limit")
	if bad != nil {
		return bad
	}
	if us.After(since) {
		since = us
	}
	a.mu.RLock()
	body := dataBody{Data: a.byTime(since, limit)}
	a.mu.RUnlock()
	return jsonResponse(http.StatusOK, body)
}

func (a *API) serveAll(r *http.Request) *response {
	since, bad := timeParam(r.URL.Query(), "updated_since")
	if bad != nil {
		return bad
	}
	a.mu.RLock()
	sel := a.byID(since)
	data := sel.window(0, sel.len())
	a.mu.RUnlock()
	return jsonResponse(http.StatusOK, data)
}

// serveRedirect redirects to the to parameter with status (default 302; 301,
// 303, 307 and 308 are accepted too).
func (a *API) serveRedirect(r *http.Request) *response {
	q := r.URL.Query()
	to := q.Get("to")
	if to == "" {
		return badRequest("to is required")
	}
	status, bad := intParam(q, "status", http.StatusFound, 301, 308)
	if bad != nil || status == 304 || status == 305 || status == 306 {
		return badRequest("status must be 301, 302, 303, 307 or 308")
	}
	h := http.Header{"Location": {to}}
	return &response{status: status, header: h}
}
