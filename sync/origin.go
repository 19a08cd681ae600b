package sync

import (
	"net/url"
	"strconv"
	"strings"
)

// sameOrigin reports whether rawURL is on the origin (scheme, host, port)
// of source.url: the only origin that receives the job's credentials
// (configured headers, auth, source.query values, URL userinfo).
func (f *Fetcher) sameOrigin(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	src, err := url.Parse(f.job.Source.URL)
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
	src, err := url.Parse(f.job.Source.URL)
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
	src, err := url.Parse(f.job.Source.URL)
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
