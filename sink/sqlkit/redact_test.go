package sqlkit_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/sink/sqlkit"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://app:s3cret@db:5432/orders?sslmode=disable", "postgres://app:xxxxx@db:5432/orders?sslmode=disable"},
		{"postgresql://app@db/orders", "postgresql://app@db/orders"},
		{"postgres://db/orders?user=app&password=s3cret&sslmode=require", "postgres://db/orders?user=app&password=xxxxx&sslmode=require"},
		{"postgres://app:p%40ss%2Fw@db/x", "postgres://app:xxxxx@db/x"},
		{"postgres://app:pa/ss@db/x", "postgres://app:xxxxx@db/x"}, // unescaped / breaks url.Parse
		{"postgres://app:pa#ss@db/x", "postgres://app:xxxxx@db/x"}, // unescaped #
		{"host=db user=app password=s3cret dbname=x", "host=db user=app password=xxxxx dbname=x"},
		{"host=db password='it''s secret' dbname=x", "host=db password=xxxxx dbname=x"},
		{"host=db PASSWORD = s3cret", "host=db PASSWORD = xxxxx"},
		{"host=db sslpassword=s3cret", "host=db sslpassword=xxxxx"},
		{"sqlite:out/orders.db", "sqlite:out/orders.db"},
		{"sqlite:///abs/orders.db", "sqlite:///abs/orders.db"},
	} {
		got := sqlkit.RedactURL(tc.in)
		if got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, secret := range []string{"s3cret", "pa/ss", "pa#ss", "p%40ss"} {
			if strings.Contains(got, secret) {
				t.Errorf("RedactURL(%q) = %q leaks %q", tc.in, got, secret)
			}
		}
	}
}

// FuzzRedactURL checks that a password set through url.UserPassword never
// survives redaction.
func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"s3cret", "p@ss", "a/b", "x:y", "%41", "🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pw string) {
		if len(pw) < 6 {
			return // short passwords match unrelated text by chance
		}
		raw := (&url.URL{Scheme: "postgres", User: url.UserPassword("app", pw), Host: "db:5432", Path: "/orders"}).String()
		got := sqlkit.RedactURL(raw)
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("RedactURL(%q) = %q: %v", raw, got, err)
		}
		if p, _ := u.User.Password(); p != "xxxxx" || strings.Contains(got, url.UserPassword("app", pw).String()) {
			t.Fatalf("RedactURL(%q) = %q", raw, got)
		}
	})
}
