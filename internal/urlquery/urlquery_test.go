package urlquery

import (
	"net/url"
	"slices"
	"testing"
)

// The pairs as written keep their bytes and order; net/url's round trip
// is what this package is for: it drops ?filter=a;b and rewrites the rest.
func TestPairsKeepTheirBytes(t *testing.T) {
	raw := "z=1&filter=status:open;type:bug&expand&cursor=a%2Fb+c&sig=Q%3D%3D"
	if got := Parse(raw).String(); got != raw {
		t.Fatalf("Parse(%q).String() = %q", raw, got)
	}
	u, _ := url.Parse("https://api.example.com/x?" + raw)
	if vs := u.Query(); vs.Has("filter") {
		t.Fatalf("net/url kept a pair holding ';' (%v): this package's reason to exist is gone", vs)
	}
	q := Parse(raw)
	if !q.Has("filter") || !slices.Equal(q.Values("filter"), []string{"status:open;type:bug"}) {
		t.Errorf("filter: %v", q.Values("filter"))
	}
	if !q.Has("expand") || !slices.Equal(q.Values("expand"), []string{""}) {
		t.Errorf("expand: %v", q.Values("expand"))
	}
	if !slices.Equal(q.Values("cursor"), []string{"a/b c"}) {
		t.Errorf("cursor: %v", q.Values("cursor"))
	}
	q.Set("page", []string{"2"})
	q.Set("z", []string{"a b", "&"})
	if got, want := q.String(), "z=a+b&z=%26&filter=status:open;type:bug&expand&cursor=a%2Fb+c&sig=Q%3D%3D&page=2"; got != want {
		t.Errorf("after Set: %q, want %q", got, want)
	}
	if !q.Del("cursor") || q.Del("cursor") || q.Has("cursor") {
		t.Errorf("Del: %q", q.String())
	}
	if got := Parse("").String(); got != "" {
		t.Errorf("empty: %q", got)
	}
	if got := Parse("a=1&&b=%zz").String(); got != "a=1&b=%zz" {
		t.Errorf("an empty pair and one that does not decode: %q", got)
	}
}

func TestCanonical(t *testing.T) {
	for _, c := range [][2]string{
		{"b&a=1", "a=1&b="},
		{"a=%7E&b=x+y", "b=x%20y&a=~"},
		{"f=a;b&g=1", "g=1&f=a%3Bb"},
	} {
		if a, b := Parse(c[0]).Canonical(), Parse(c[1]).Canonical(); a != b {
			t.Errorf("Canonical(%q) = %q, Canonical(%q) = %q", c[0], a, c[1], b)
		}
	}
	if Parse("c=a;1").Canonical() == Parse("c=a;2").Canonical() {
		t.Errorf("two cursors holding ';' are one")
	}
}
