package sync

import (
	"net/url"
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
