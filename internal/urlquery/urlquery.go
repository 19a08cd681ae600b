// Package urlquery edits a URL's query as it is written. net/url's Values
// drops a pair holding ';' (Go's query parser refuses it as a separator),
// writes a bare key as "key=" and sorts the rest when it encodes them
// again: a source.url's ?filter=a;b lost its filter, and an API's next link
// its cursor. Here the pairs a job file or an API wrote keep their bytes
// and their order; only the pairs idemsync sets or removes change
// (docs/pagination.md, "The request's query").
package urlquery

import (
	"net/url"
	"slices"
	"strings"
)

// Query is a URL's raw query as its pairs, in order.
type Query struct{ pairs []string }

// Parse splits a raw query (URL.RawQuery) into its pairs; empty pairs
// ("a=1&&b=2") are dropped.
func Parse(raw string) *Query {
	q := &Query{}
	for _, p := range strings.Split(raw, "&") {
		if p != "" {
			q.pairs = append(q.pairs, p)
		}
	}
	return q
}

// unescape decodes s as a query component, or returns it as it is when it
// does not decode.
func unescape(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

// Key and Value are a pair's key and value, decoded.
func Key(pair string) string {
	k, _, _ := strings.Cut(pair, "=")
	return unescape(k)
}

func Value(pair string) string {
	_, v, _ := strings.Cut(pair, "=")
	return unescape(v)
}

// Has reports whether a pair has the key k.
func (q *Query) Has(k string) bool {
	return slices.ContainsFunc(q.pairs, func(p string) bool { return Key(p) == k })
}

// Values returns the values of the pairs of key k, in order (nil when none).
func (q *Query) Values(k string) []string {
	var vs []string
	for _, p := range q.pairs {
		if Key(p) == k {
			vs = append(vs, Value(p))
		}
	}
	return vs
}

// Del removes the pairs of key k and reports whether there were any.
func (q *Query) Del(k string) bool {
	return q.DelFunc(func(p string) bool { return Key(p) == k })
}

// DelFunc removes the pairs (as written) for which drop is true and
// reports whether it removed any.
func (q *Query) DelFunc(drop func(pair string) bool) bool {
	n := len(q.pairs)
	q.pairs = slices.DeleteFunc(q.pairs, drop)
	return len(q.pairs) != n
}

// Set makes vs the values of key k: the pairs of k are replaced, where
// the first of them was (at the end when there was none), by k=v for each
// v, encoded as url.Values encodes them.
func (q *Query) Set(k string, vs []string) {
	at := slices.IndexFunc(q.pairs, func(p string) bool { return Key(p) == k })
	q.Del(k)
	if at < 0 || at > len(q.pairs) {
		at = len(q.pairs)
	}
	add := make([]string, len(vs))
	for i, v := range vs {
		add[i] = url.QueryEscape(k) + "=" + url.QueryEscape(v)
	}
	q.pairs = slices.Insert(q.pairs, at, add...)
}

// String returns the raw query: the pairs joined by '&'.
func (q *Query) String() string { return strings.Join(q.pairs, "&") }

// Canonical returns the query with each pair that decodes encoded again
// ("b" as "b=", "%7E" as "~") and the pairs sorted: two queries equal but
// for their order and their encoding have the same Canonical.
func (q *Query) Canonical() string {
	c := make([]string, len(q.pairs))
	for i, p := range q.pairs {
		k, v, _ := strings.Cut(p, "=")
		dk, ek := url.QueryUnescape(k)
		dv, ev := url.QueryUnescape(v)
		if ek != nil || ev != nil {
			c[i] = p
			continue
		}
		c[i] = url.QueryEscape(dk) + "=" + url.QueryEscape(dv)
	}
	slices.Sort(c)
	return strings.Join(c, "&")
}

// Keys returns the distinct keys of the pairs, in the order they first
// appear.
func (q *Query) Keys() []string {
	var ks []string
	for _, p := range q.pairs {
		if k := Key(p); !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return ks
}
