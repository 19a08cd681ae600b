package fakeapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// Quirks are misbehaviours of real APIs that make the end of pagination
// hard to tell: a silent page-size cap, a total-count header, and one-off
// pages that lie (empty or short while their metadata still says there is
// more, or a has_more that says false too early). The zero value has none.
type Quirks struct {
	// PageCap, when > 0, silently serves at most PageCap records per page
	// whatever per_page or limit asks for, as many APIs do (page metadata
	// such as total_pages is computed with the capped size).
	PageCap int
	// TotalHeader, when set (e.g. "X-Total-Count"), makes every successful
	// list response carry the number of records the request's filter
	// (updated_since) matches in that header.
	TotalHeader string
	// Lies replace the answer to chosen list requests.
	Lies []Lie
}

// Lie changes the answer to the requests of one route whose query
// parameter Param equals Value (e.g. Path "/page", Param "page", Value "4"),
// for the first Times such requests (0 means 1; -1 means always). Headers,
// metadata and status are kept unless a field below says otherwise.
type Lie struct {
	Path, Param, Value string
	Times              int
	// Keep is how many of the page's records are kept (0: an empty page).
	Keep int
	// HasMore, when set, replaces meta.has_more (page route) or has_more
	// at the top level of an object body.
	HasMore *bool
	// Status, when set, replaces the status; 204 also drops the body.
	Status int
	// Body, when set, replaces the body (and Content-Type, with
	// ContentType) entirely.
	Body, ContentType string
}

// quirkState is the API's current Quirks and how often each lie was told.
type quirkState struct {
	mu   sync.Mutex
	q    Quirks
	told map[int]int // lie index → times told
}

// SetQuirks replaces the API's quirks and forgets how often lies were told.
func (a *API) SetQuirks(q Quirks) {
	a.quirks.mu.Lock()
	defer a.quirks.mu.Unlock()
	a.quirks.q = q
	a.quirks.q.Lies = append([]Lie(nil), q.Lies...)
	a.quirks.told = map[int]int{}
}

// LiesTold returns how many requests got a lie since SetQuirks.
func (a *API) LiesTold() int {
	a.quirks.mu.Lock()
	defer a.quirks.mu.Unlock()
	n := 0
	for _, c := range a.quirks.told {
		n += c
	}
	return n
}

// capSize applies Quirks.PageCap to a requested page size.
func (a *API) capSize(n int) int {
	a.quirks.mu.Lock()
	defer a.quirks.mu.Unlock()
	if c := a.quirks.q.PageCap; c > 0 && n > c {
		return c
	}
	return n
}

// applyQuirks adds the total header to a successful list response and
// replaces it when a lie is due.
func (a *API) applyQuirks(r *http.Request, resp *response) *response {
	a.quirks.mu.Lock()
	q := a.quirks.q
	lie, due := Lie{}, false
	for i, l := range q.Lies {
		if l.Path != r.URL.Path || r.URL.Query().Get(l.Param) != l.Value {
			continue
		}
		times := l.Times
		if times == 0 {
			times = 1
		}
		if times > 0 && a.quirks.told[i] >= times {
			continue
		}
		a.quirks.told[i]++
		lie, due = l, true
		break
	}
	a.quirks.mu.Unlock()
	if q.TotalHeader != "" && resp.status == http.StatusOK {
		since, bad := timeParam(r.URL.Query(), "updated_since")
		if bad == nil {
			a.mu.RLock()
			n := a.byID(since).len()
			a.mu.RUnlock()
			resp.header.Set(q.TotalHeader, strconv.Itoa(n))
		}
	}
	if !due {
		return resp
	}
	return lie.tell(resp)
}

// tell returns resp changed as the lie says.
func (l Lie) tell(resp *response) *response {
	out := &response{status: resp.status, header: resp.header.Clone(), body: resp.body}
	if l.Status != 0 {
		out.status = l.Status
	}
	switch {
	case out.status == http.StatusNoContent:
		out.body = nil
		out.header.Del("Content-Type")
		return out
	case l.Body != "":
		out.body = []byte(l.Body)
		if l.ContentType != "" {
			out.header.Set("Content-Type", l.ContentType)
		}
		return out
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(resp.body))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return out
	}
	keep := func(data any) any {
		arr, ok := data.([]any)
		if !ok {
			return data
		}
		return arr[:min(max(l.Keep, 0), len(arr))]
	}
	switch b := v.(type) {
	case []any:
		v = keep(b)
	case map[string]any:
		b["data"] = keep(b["data"])
		if l.HasMore != nil {
			if meta, ok := b["meta"].(map[string]any); ok {
				meta["has_more"] = *l.HasMore
			} else {
				b["has_more"] = *l.HasMore
			}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		out.body = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	return out
}
