package httpsource

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/urlquery"
	idsync "github.com/idemsync/idemsync/sync"
)

// sameOrigin reports whether rawURL is on the origin (scheme, host, port)
// of source.url: the only origin that receives the job's credentials
// (configured headers, auth, source.query values, URL userinfo).
func (f *Fetcher) sameOrigin(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	src, err := url.Parse(f.cfg.Source.URL)
	if err != nil {
		return false
	}
	return origin(u) == origin(src)
}

// warnForeignOrigin logs, once per fetcher, that a next link or URL left
// the source's origin and is followed without credentials.
func (f *Fetcher) warnForeignOrigin(rawURL string) {
	if f.foreignWarned.CompareAndSwap(false, true) {
		u, _ := url.Parse(rawURL)
		to := ""
		if u != nil {
			to = origin(u)
		}
		f.logger.Warn("next page is on another origin: followed without the job's credentials (headers, auth, query)", "to", f.redact(to))
	}
}

// pathMarker stands, in a stored next URL, for segment i of source.url's
// path when that segment holds a secret (a ${VAR}).
func pathMarker(i int) string { return "{$" + strconv.Itoa(i) + "}" }

// stripPathSecrets replaces the segments of u's path that repeat a secret
// segment of source.url's path (same origin only) with markers; it reports
// whether it changed u.
func (f *Fetcher) stripPathSecrets(u *url.URL) bool {
	src, err := url.Parse(f.cfg.Source.URL)
	if err != nil || origin(u) != origin(src) {
		return false
	}
	srcSegs := strings.Split(src.Path, "/")
	segs := strings.Split(u.Path, "/")
	changed := false
	for i := range segs {
		if i < len(srcSegs) && segs[i] == srcSegs[i] && segs[i] != "" && f.redact(segs[i]) != segs[i] {
			segs[i], changed = pathMarker(i), true
		}
	}
	if changed {
		u.Path, u.RawPath = strings.Join(segs, "/"), ""
	}
	return changed
}

// restorePathSecrets puts source.url's path segments back where a stored
// next URL has markers.
func (f *Fetcher) restorePathSecrets(u *url.URL) {
	if !strings.Contains(u.Path, "{$") {
		return
	}
	src, err := url.Parse(f.cfg.Source.URL)
	if err != nil || origin(u) != origin(src) {
		return
	}
	srcSegs := strings.Split(src.Path, "/")
	segs := strings.Split(u.Path, "/")
	for i := range segs {
		if i < len(srcSegs) && segs[i] == pathMarker(i) {
			segs[i] = srcSegs[i]
		}
	}
	u.Path, u.RawPath = strings.Join(segs, "/"), ""
}

// checkRedirect refuses a redirect to an origin that is neither the
// source's nor in source.follow_origins (before it is looked up), and
// strips the job's configured headers when a redirect leaves the origin of
// the original request (Go keeps custom headers otherwise).
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if !f.mayFollow(req.URL) {
		return f.refuse("a redirect", req.URL)
	}
	if err := f.keepsPosition(req, via[len(via)-1]); err != nil {
		return err
	}
	if origin(req.URL) != origin(via[0].URL) {
		for k := range f.cfg.Source.Headers {
			req.Header.Del(k)
		}
		req.Header.Del("Authorization")
		req.Header.Del("Cookie")
		f.logger.Warn("redirect to another origin: configured headers not sent", "to", origin(req.URL))
	}
	return nil
}

// keepsPosition refuses a redirect from prev to req that loses the
// request's position: a method changed (a 301, 302 or 303 turns a POST
// into a GET and drops its body, where a GraphQL or body position is) or
// the position's query parameter (pagination.param) dropped or changed.
// Its answer would be another page, taken for this one: the records of
// this page would be lost (docs/fault-tolerance.md, "Hostile input").
func (f *Fetcher) keepsPosition(req, prev *http.Request) error {
	status := 0
	if req.Response != nil {
		status = req.Response.StatusCode
	}
	what := fmt.Sprintf("a redirect (HTTP %d) from %s to %s", status, f.redact(prev.URL.Redacted()), f.redact(req.URL.Redacted()))
	hint := "the API redirected the request to a URL that is not the same page; set source.url to the URL it redirects to, or fix the API (nothing was written for this page; the checkpoint is intact)"
	if req.Method != prev.Method {
		return &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("%s turns the %s into a %s without its body: refused, its answer would not be this page", what, prev.Method, req.Method), Hint: hint}
	}
	k := f.cfg.PositionParam
	if k == "" {
		return nil
	}
	from := urlquery.Parse(prev.URL.RawQuery)
	if !from.Has(k) {
		return nil
	}
	if to := urlquery.Parse(req.URL.RawQuery).Values(k); !slices.Equal(to, from.Values(k)) {
		return &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("%s drops or changes the position parameter %s=%s: refused, its answer would be another page", what, k, f.redact(strings.Join(from.Values(k), ","))), Hint: hint}
	}
	return nil
}

func origin(u *url.URL) string { return idsync.Origin(u) }

// mayFollow reports whether a request may go to u: the source's own origin
// or one source.follow_origins lists (docs/job-file.md).
func (f *Fetcher) mayFollow(u *url.URL) bool {
	src, err := url.Parse(f.cfg.Source.URL)
	if err != nil {
		return false
	}
	o := origin(u)
	return o == origin(src) || slices.Contains(f.cfg.Source.FollowOrigins, o)
}

// refuse is the error of a next page or redirect (what) that leads to u, on
// an origin the job does not follow: permanent, naming the origin and the
// key that allows it. Nothing was sent there, not even a DNS lookup.
func (f *Fetcher) refuse(what string, u *url.URL) *contract.Error {
	o := f.redact(origin(u))
	return &contract.Error{Class: contract.Permanent,
		Msg:  fmt.Sprintf("%s leads to another origin, %s: refused (not in source.follow_origins)", what, o),
		Hint: fmt.Sprintf("nothing was requested from %s; to follow it (without the job's credentials), add it to source.follow_origins: [%s]", o, o)}
}

// BuildURL returns the request URL: base (source.url or a next URL) with the
// job's fixed query, then params, added. A next URL keeps its own values:
// fixed query parameters are only added where it lacks them.
func (f *Fetcher) BuildURL(base string, params url.Values, isNext bool) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("invalid URL %q", f.cfg.Secrets.Redact(base))
	}
	if isNext {
		src, _ := url.Parse(f.cfg.Source.URL)
		if !u.IsAbs() {
			u = src.ResolveReference(u)
		} else if u.User == nil && src.User != nil && origin(u) == origin(src) {
			u.User = src.User // the source's credentials, on its own origin only
		}
		f.restorePathSecrets(u)
		if origin(u) == origin(src) {
			f.restoreURLQuerySecrets(u, src)
		}
	}
	// The query as written: its pairs keep their bytes and order, and the
	// job's own parameters are set after them (urlquery).
	q := urlquery.Parse(u.RawQuery)
	foreign := isNext && !f.sameOrigin(u.String())
	for _, k := range slices.Sorted(maps.Keys(f.cfg.Source.Query)) {
		if foreign {
			break // source.query may hold API keys: never to another origin
		}
		if !isNext || !q.Has(k) {
			q.Set(k, f.cfg.Source.Query[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if isNext && q.Has(k) && k != f.cfg.PositionParam {
			continue
		}
		q.Set(k, params[k])
	}
	u.RawQuery = q.String()
	return u.String(), nil
}

// CheckpointURL returns a next-page URL as it may be stored in the state
// file: without the source.query parameters it repeats with their
// configured values (APIs echo the request's query into their next links,
// and those values may be ${VAR} secrets) and without the source URL's
// credentials. BuildURL puts both back on every request (the credentials
// only on the source's own origin). Other URLs are returned unchanged.
func (f *Fetcher) CheckpointURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	changed := false
	if src, err := url.Parse(f.cfg.Source.URL); err == nil && src.User != nil && u.User != nil && u.User.String() == src.User.String() {
		u.User, changed = nil, true
	}
	if f.stripPathSecrets(u) {
		changed = true
	}
	q := urlquery.Parse(u.RawQuery)
	strip := false
	for k, v := range f.cfg.Source.Query {
		if slices.Equal(q.Values(k), v) {
			q.Del(k)
			strip = true
		}
	}
	// The parameters of source.url's own query that hold a secret, which
	// BuildURL puts back on the source's origin.
	if src, err := url.Parse(f.cfg.Source.URL); err == nil && origin(u) == origin(src) {
		sq := urlquery.Parse(src.RawQuery)
		for _, k := range sq.Keys() {
			if v := sq.Values(k); slices.Equal(q.Values(k), v) && f.holdsSecret(v) {
				q.Del(k)
				strip = true
			}
		}
	}
	// The query API key, which the auth chain sets on every request to
	// the source's origin; on another origin, every value that holds a
	// secret, which is never sent there (originTransport).
	if a := f.cfg.Source.Auth; a != nil && a.Type == idsync.AuthAPIKey && a.In == "query" && q.Has(a.Name) && f.sameOrigin(u.String()) {
		q.Del(a.Name)
		strip = true
	}
	if !f.sameOrigin(u.String()) && f.dropSecretParams(q) {
		strip = true
	}
	if strip {
		u.RawQuery, changed = q.String(), true
	}
	if !changed {
		return raw
	}
	return u.String()
}

// restoreURLQuerySecrets adds to u, a next URL on the source's origin, the
// parameters of source.url's own query (src) that hold a secret and that
// u lacks: CheckpointURL stored it without them.
func (f *Fetcher) restoreURLQuerySecrets(u, src *url.URL) {
	q, sq, added := urlquery.Parse(u.RawQuery), urlquery.Parse(src.RawQuery), false
	for _, k := range sq.Keys() {
		if v := sq.Values(k); !q.Has(k) && f.holdsSecret(v) {
			q.Set(k, v)
			added = true
		}
	}
	if added {
		u.RawQuery = q.String()
	}
}

// holdsSecret reports whether one of vs holds a secret of the job.
func (f *Fetcher) holdsSecret(vs []string) bool {
	return slices.ContainsFunc(vs, func(v string) bool { return f.redact(v) != v })
}

// dropSecretParams removes from q every pair that holds a secret of the
// job, as written or decoded, and reports whether it removed any.
func (f *Fetcher) dropSecretParams(q *urlquery.Query) bool {
	return q.DelFunc(func(p string) bool {
		return f.redact(p) != p || f.holdsSecret([]string{urlquery.Key(p), urlquery.Value(p)})
	})
}
