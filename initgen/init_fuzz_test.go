package initgen

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/jobfile"
	"github.com/tidwall/gjson"
)

// FuzzInit reads a hostile first page as idemsync init does (a URL, a JSON
// body Fetch found valid, a Link header). Build never panics; a file it
// writes is one the loader reads, refused for nothing but the decisions
// it lists (docs/job-file.md, "Starting from idemsync init"): a record's
// field names cannot break the YAML written around them.
func FuzzInit(f *testing.F) {
	for _, c := range corpus {
		f.Add(c.url, c.body, c.link)
	}
	f.Add("https://x/a?since=2024-01-01T00:00:00Z&limit=2", `[{"id":1,"a: b\n#":"x","updated_at":"2024-01-02T00:00:00Z"}]`, "")
	f.Fuzz(func(t *testing.T, rawURL, body, link string) {
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !gjson.Valid(body) {
			return // Fetch and init's URL check refuse these
		}
		p := &Page{url: u, header: http.Header{}, body: gjson.Parse(body)}
		if link != "" {
			p.header.Set("Link", link)
		}
		spec, sum, err := Build(p, "things")
		if err != nil {
			return
		}
		_, err = jobfile.Load([]byte(spec), "/jobs/things.yaml", anyVar)
		if err == nil {
			return
		}
		if decide, _ := sum["decide"].([]string); len(decide) == 0 || !strings.Contains(err.Error(), "decide: left open by idemsync init") {
			t.Fatalf("the written file does not load: %v\n%s", err, spec)
		}
	})
}
