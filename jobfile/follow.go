package jobfile

import (
	"net/url"

	idsync "github.com/idemsync/idemsync/sync"
)

// followDefaults checks source.follow_origins and writes each entry as its
// origin (scheme://host[:port], lower case, no default port), the form the
// fetcher compares a next URL's or a redirect's origin with.
func (j loading) followDefaults(bad func(key, format string, args ...any)) {
	s := &j.Source
	for i, o := range s.FollowOrigins {
		u, err := url.Parse(o)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "":
			bad("source.follow_origins", "%q is not an origin: write scheme://host[:port], e.g. https://api.example.com", o)
		case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
			bad("source.follow_origins", "%q is not an origin: only scheme://host[:port], without user, path or query", o)
		default:
			s.FollowOrigins[i] = idsync.Origin(u)
		}
	}
}
