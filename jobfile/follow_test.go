package jobfile

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// source.follow_origins takes origins only, written as the fetcher
// compares them; anything else is an error naming the key and the value.
func TestFollowOrigins(t *testing.T) {
	load := func(v string) (string, []string) {
		spec := "name: j\nsource:\n  url: https://api.example.com/v1\n  follow_origins: " + v + "\ntarget: {url: \"sqlite:out.db\", table: t, key: [id]}\n"
		job, err := Load([]byte(spec), filepath.Join(t.TempDir(), "job.yaml"), env(nil))
		if err != nil {
			return err.Error(), nil
		}
		return "", job.Source.FollowOrigins
	}
	for v, want := range map[string][]string{
		"[HTTPS://API.GitHub.com:443/, http://cdn.example.com:8080]": {"https://api.github.com", "http://cdn.example.com:8080"},
		"https://api.github.com":                                     {"https://api.github.com"},
	} {
		if msg, got := load(v); msg != "" || !slices.Equal(got, want) {
			t.Errorf("%s: %v %q, want %q", v, msg, got, want)
		}
	}
	for _, v := range []string{"[api.github.com]", "[https://api.github.com/repos]", "[ftp://files.example.com]", "[\"https://u:p@api.github.com\"]", `["https://x.example.com?q=1"]`} {
		if msg, _ := load(v); !strings.Contains(msg, "source.follow_origins") || !strings.Contains(msg, "not an origin") {
			t.Errorf("%s: %q, want an error naming source.follow_origins", v, msg)
		}
	}
}
