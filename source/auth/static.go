package auth

import (
	"net/http"

	"github.com/idemsync/idemsync/internal/urlquery"
)

// headerAuth sets one header on every request (bearer, api_key in a header).
func headerAuth(name, value string) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			r := req.Clone(req.Context())
			r.Header.Set(name, value)
			return base.RoundTrip(r)
		})
	}
}

// basicAuth sends HTTP Basic credentials.
func basicAuth(user, password string) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			r := req.Clone(req.Context())
			r.SetBasicAuth(user, password)
			return base.RoundTrip(r)
		})
	}
}

// queryAuth adds an API key as a query parameter.
func queryAuth(name, value string) func(http.RoundTripper) http.RoundTripper {
	return func(base http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			r := req.Clone(req.Context())
			u := *r.URL
			q := urlquery.Parse(u.RawQuery) // the query as written (docs/pagination.md)
			q.Set(name, []string{value})
			u.RawQuery = q.String()
			r.URL = &u
			return base.RoundTrip(r)
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
