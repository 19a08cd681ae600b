package fakeapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// shopLog counts and records the requests a Shop received.
type shopLog struct {
	mu       sync.Mutex
	byPath   map[string]int
	reqs     []ShopRequest
	faults   int
	inFlight int
	maxIn    int
}

// ShopRequest is one request a Shop received.
type ShopRequest struct {
	Path  string
	Query url.Values
}

// reset forgets every request counted and recorded.
func (l *shopLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byPath, l.reqs, l.faults, l.maxIn = map[string]int{}, nil, 0, l.inFlight
}

// enter counts a request in flight; the returned function ends it.
func (l *shopLog) enter() func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight++
	l.maxIn = max(l.maxIn, l.inFlight)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.inFlight--
	}
}

// MaxInFlight returns the most requests the Shop was serving at once since
// NewShop or ResetCounters.
func (s *Shop) MaxInFlight() int {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.maxIn
}

// add counts and records request r.
func (l *shopLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byPath[r.URL.Path]++
	l.reqs = append(l.reqs, ShopRequest{Path: r.URL.Path, Query: r.URL.Query()})
}

// Requests returns how many requests arrived for URL path (e.g.
// "/orders/7/items"), faulted ones included, since NewShop or ResetCounters.
func (s *Shop) Requests(path string) int {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.byPath[path]
}

// TotalRequests returns how many requests arrived on any path since NewShop
// or ResetCounters.
func (s *Shop) TotalRequests() int {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return len(s.log.reqs)
}

// RequestLog returns every request since NewShop or ResetCounters, in the
// order they arrived.
func (s *Shop) RequestLog() []ShopRequest {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return append([]ShopRequest(nil), s.log.reqs...)
}

// Faults returns how many random faults were injected since NewShop or
// ResetCounters.
func (s *Shop) Faults() int {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.faults
}

// ResetCounters forgets every request counted and recorded so far.
func (s *Shop) ResetCounters() { s.log.reset() }

// ParentsPath is the route of the parents: "/orders" or "/repos".
func (s *Shop) ParentsPath() string {
	if s.shape == ShapeGitHub {
		return "/repos"
	}
	return "/orders"
}

// ChildPath is the route of parent id's children: "/orders/{id}/items" or
// "/repos/{owner}/{name}/issues".
func (s *Shop) ChildPath(id int) string {
	if s.shape == ShapeGitHub {
		s.mu.RLock()
		defer s.mu.RUnlock()
		if i, ok := s.parentIndex(id); ok {
			return "/repos/" + s.parents[i].Owner + "/" + s.parents[i].Name + "/issues"
		}
		return ""
	}
	return "/orders/" + strconv.Itoa(id) + "/items"
}

// ChildRequests returns how many requests arrived for parent id's children
// since NewShop or ResetCounters.
func (s *Shop) ChildRequests(id int) int { return s.Requests(s.ChildPath(id)) }

// ServeHTTP records the request, sleeps the latency, then serves the route,
// a configured failure (SetFailing, SetNotFound) or a random fault.
func (s *Shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer s.afterRequest(r)
	s.log.add(r)
	defer s.log.enter()()
	if !sleep(r.Context(), time.Duration(s.latency.Load())) {
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		errorResponse(http.StatusMethodNotAllowed, "method not allowed").write(w)
		return
	}
	s.mu.RLock()
	status := 0
	for prefix, st := range s.failing {
		if strings.HasPrefix(r.URL.Path, prefix) {
			status = st
		}
	}
	s.mu.RUnlock()
	if status != 0 {
		errorResponse(status, http.StatusText(status)).write(w)
		return
	}
	render := func() *response { return s.route(r) }
	if kind, slow, ok := s.faults.pick(); ok {
		s.log.mu.Lock()
		s.log.faults++
		s.log.mu.Unlock()
		if writeFault(w, r, kind, slow, render) {
			return
		}
	}
	render().write(w)
}

// route serves the request's path.
func (s *Shop) route(r *http.Request) *response {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case s.shape == ShapeShop && len(parts) == 1 && parts[0] == "customers":
		return s.serveCustomers(r)
	case s.shape == ShapeShop && len(parts) == 1 && parts[0] == "orders",
		s.shape == ShapeGitHub && len(parts) == 1 && parts[0] == "repos":
		return s.serveParents(r, "")
	case s.shape == ShapeGitHub && len(parts) == 3 && parts[0] == "orgs" && parts[2] == "repos":
		return s.serveParents(r, parts[1])
	case s.shape == ShapeShop && len(parts) == 3 && parts[0] == "orders" && parts[2] == "items":
		id, err := strconv.Atoi(parts[1])
		if err != nil {
			return errorResponse(http.StatusNotFound, fmt.Sprintf("no order %q", parts[1]))
		}
		return s.serveChildren(r, id)
	case s.shape == ShapeGitHub && len(parts) == 4 && parts[0] == "repos" && parts[3] == "issues":
		return s.serveChildren(r, s.repoID(parts[1], parts[2]))
	}
	return errorResponse(http.StatusNotFound, "no such route")
}

// repoID returns the id of repository owner/name, or 0.
func (s *Shop) repoID(owner, name string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, p := range s.parents {
		if p.Owner == owner && p.Name == name {
			return p.ID
		}
	}
	return 0
}

// serveCustomers lists the customers.
func (s *Shop) serveCustomers(r *http.Request) *response {
	s.mu.RLock()
	items := make([]shopItem, 0, len(s.customers))
	for _, c := range s.customers {
		items = append(items, shopItem{id: c.ID, at: c.UpdatedAt, json: map[string]any{
			"id": c.ID, "name": c.Name, "email": c.Email, "updated_at": c.UpdatedAt}})
	}
	s.mu.RUnlock()
	return s.list(r, items)
}

// serveParents lists the parents updated since updated_since (every one
// without it), only owner's when owner is not empty.
func (s *Shop) serveParents(r *http.Request, owner string) *response {
	since, bad := timeParam(r.URL.Query(), "updated_since")
	if bad != nil {
		return bad
	}
	s.mu.RLock()
	items := make([]shopItem, 0, len(s.parents))
	for _, p := range s.parents {
		if !p.UpdatedAt.Before(since) && (owner == "" || p.Owner == owner) {
			items = append(items, shopItem{id: p.ID, at: p.UpdatedAt, json: s.parentJSON(p)})
		}
	}
	s.mu.RUnlock()
	return s.list(r, items)
}

// serveChildren lists parent id's children, or answers 404 when there is
// no such parent or SetNotFound marked it.
func (s *Shop) serveChildren(r *http.Request, id int) *response {
	s.mu.RLock()
	_, ok := s.parentIndex(id)
	missing := !ok || s.notFound[id]
	var items []shopItem
	for _, c := range s.children[id] {
		items = append(items, shopItem{id: c.ID, at: c.UpdatedAt, json: s.childJSON(c)})
	}
	s.mu.RUnlock()
	if missing {
		return errorResponse(http.StatusNotFound, fmt.Sprintf("parent %d not found", id))
	}
	return s.list(r, items)
}

// parentJSON is parent p as the shape's API writes it.
func (s *Shop) parentJSON(p ShopParent) map[string]any {
	if s.shape == ShapeGitHub {
		return map[string]any{"id": p.ID, "name": p.Name, "full_name": p.Owner + "/" + p.Name,
			"owner": map[string]any{"login": p.Owner}, "visibility": p.Status, "updated_at": p.UpdatedAt}
	}
	return map[string]any{"id": p.ID, "customer_id": p.CustomerID, "status": p.Status,
		"total": p.Total, "updated_at": p.UpdatedAt}
}

// childJSON is child c as the shape's API writes it: without its parent's
// key, which the client knows from the path.
func (s *Shop) childJSON(c ShopChild) map[string]any {
	if s.shape == ShapeGitHub {
		return map[string]any{"id": c.ID, "number": c.Number, "title": c.SKU, "comments": c.Qty,
			"state": "open", "updated_at": c.UpdatedAt}
	}
	return map[string]any{"id": c.ID, "line": c.Number, "sku": c.SKU, "qty": c.Qty, "updated_at": c.UpdatedAt}
}

// shopItem is one element of a list, ordered by id.
type shopItem struct {
	id   int
	at   time.Time
	json map[string]any
}

// list pages items: by cursor (after the cursor's id; limit or per_page)
// when the request has a non-empty cursor, else by page and per_page.
func (s *Shop) list(r *http.Request, items []shopItem) *response {
	q := r.URL.Query()
	size, bad := intParam(q, "per_page", s.pageSize, 1, MaxPageSize)
	if bad == nil && q.Get("limit") != "" {
		size, bad = intParam(q, "limit", s.pageSize, 1, MaxPageSize)
	}
	if bad != nil {
		return bad
	}
	from, page := 0, 0
	if c := q.Get("cursor"); c != "" {
		after, err := decodeCursor(c)
		if err != nil {
			return badRequest("invalid cursor %q", c)
		}
		for from < len(items) && items[from].id <= after {
			from++
		}
	} else {
		if page, bad = intParam(q, "page", 1, 1, 1<<30); bad != nil {
			return bad
		}
		from = min((page-1)*size, len(items))
	}
	to := min(from+size, len(items))
	data := make([]map[string]any, 0, to-from)
	for _, it := range items[from:to] {
		data = append(data, it.json)
	}
	more := to < len(items)
	if s.shape == ShapeGitHub {
		return s.linked(r, data, page, size, more)
	}
	meta := map[string]any{"per_page": size, "total": len(items),
		"total_pages": (len(items) + size - 1) / size, "has_more": more, "next_cursor": nil}
	if page > 0 {
		meta["page"] = page
	}
	if more && to > from {
		meta["next_cursor"] = encodeCursor(items[to-1].id)
	}
	return jsonResponse(http.StatusOK, map[string]any{"data": data, "meta": meta})
}

// linked answers a bare array with a Link header naming the next page
// while more remain (page style only; a cursor request gets none).
func (s *Shop) linked(r *http.Request, data []map[string]any, page, size int, more bool) *response {
	resp := jsonResponse(http.StatusOK, data)
	if more && page > 0 {
		u := linkTo(r, true, map[string]string{"page": strconv.Itoa(page + 1), "per_page": strconv.Itoa(size)})
		resp.header.Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", u))
	}
	return resp
}
