package fakeapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxPageSize is the largest per_page or limit a request may ask for; a
// larger one gets 400.
const MaxPageSize = 10000

// route is one path the API serves. List routes can be faulted and count
// towards MutateEvery.
type route struct {
	list  bool
	serve func(a *API, r *http.Request) *response
}

var routes = map[string]route{
	"/page":          {true, (*API).servePage},
	"/offset":        {true, (*API).serveOffset},
	"/cursor":        {true, (*API).serveCursor},
	"/cursor-url":    {true, (*API).serveCursorURL},
	"/cursor-header": {true, (*API).serveCursorHeader},
	"/link":          {true, (*API).serveLink},
	"/hwm":           {true, (*API).serveHWM},
	"/all":           {true, (*API).serveAll},
	"/redirect":      {false, (*API).serveRedirect},
}

// ServeHTTP serves the routes listed in the package documentation. In order
// it records the request (see Requests, LastHeaders), sleeps the latency
// (returning without a response if the request is cancelled meanwhile),
// checks the bearer token, then serves the route or, for a list route, maybe
// a fault instead.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.obs.request(r)
	if !sleep(r.Context(), time.Duration(a.latency.Load())) {
		return
	}
	if a.token != "" {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, []byte("Bearer "+a.token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="fakeapi"`)
			errorResponse(http.StatusUnauthorized, "missing or invalid bearer token").write(w)
			return
		}
	}
	rt, ok := routes[r.URL.Path]
	if !ok {
		errorResponse(http.StatusNotFound, "no such route").write(w)
		return
	}
	if rt.list && r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		errorResponse(http.StatusMethodNotAllowed, "method not allowed").write(w)
		return
	}
	if rt.list {
		if kind, slow, ok := a.faults.pick(); ok {
			if a.inject(w, r, kind, slow, func() *response { return rt.serve(a, r) }) {
				return
			}
		}
	}
	resp := rt.serve(a, r)
	if rt.list && resp.status == http.StatusOK {
		if fn := a.obs.listServed(); fn != nil {
			fn(a)
		}
	}
	if rt.list {
		resp = a.applyQuirks(r, resp)
	}
	resp.write(w)
}

// response is a fully built reply, so a fault can replace or cut it.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (resp *response) write(w http.ResponseWriter) {
	h := w.Header()
	maps.Copy(h, resp.header)
	h.Set("Content-Length", strconv.Itoa(len(resp.body)))
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

// jsonResponse encodes v without HTML escaping, so next URLs keep a
// literal '&' rather than \u0026.
func jsonResponse(status int, v any) *response {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return errorResponse(http.StatusInternalServerError, "encode: "+err.Error())
	}
	h := http.Header{"Content-Type": {"application/json"}}
	return &response{status: status, header: h, body: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))}
}

// apiError is the body of every error the API returns.
type apiError struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

func errorResponse(status int, msg string) *response {
	var e apiError
	e.Error.Message = msg
	body, _ := json.Marshal(e)
	h := http.Header{"Content-Type": {"application/json"}}
	return &response{status: status, header: h, body: body}
}

func badRequest(format string, args ...any) *response {
	return errorResponse(http.StatusBadRequest, fmt.Sprintf(format, args...))
}

// intParam reads query parameter name as an integer in [lo, hi], or def
// when it is absent or empty.
func intParam(q url.Values, name string, def, lo, hi int) (int, *response) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s must be an integer from %d to %d, got %q", name, lo, hi, s)
	}
	return n, nil
}

// sizeParam reads a page size parameter, defaulting to the API's page size.
func (a *API) sizeParam(q url.Values, name string) (int, *response) {
	n, bad := intParam(q, name, a.pageSize, 1, MaxPageSize)
	return a.capSize(n), bad
}

// timeParam reads query parameter name as an RFC 3339 instant, or the zero
// time when it is absent or empty. A '+' of a zone offset that arrived
// unescaped (and so decoded as a space) is accepted too.
func timeParam(q url.Values, name string) (time.Time, *response) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t, err = time.Parse(time.RFC3339Nano, strings.ReplaceAll(s, " ", "+"))
	}
	if err != nil {
		return time.Time{}, badRequest("%s must be an RFC 3339 time, got %q", name, s)
	}
	return t, nil
}

// linkTo returns the URL of this route with the request's query parameters
// changed by set: absolute (scheme and Host of the request) or, when
// absolute is false, an absolute-path reference.
func linkTo(r *http.Request, absolute bool, set map[string]string) string {
	q := r.URL.Query()
	for k, v := range set {
		q.Set(k, v)
	}
	u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	if absolute {
		u.Scheme, u.Host = "http", r.Host
		if r.TLS != nil {
			u.Scheme = "https"
		}
	}
	return u.String()
}

// sleep waits d or until ctx is done, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
