package paging

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"
)

// scalar returns a JSON value as a cursor string: "" for missing, null,
// false or empty.
func scalar(v gjson.Result) string {
	switch v.Type {
	case gjson.Null, gjson.False:
		return ""
	case gjson.String:
		return v.Str
	case gjson.Number:
		return v.Raw
	}
	if !v.Exists() {
		return ""
	}
	return v.Raw
}

func resolveURL(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return "", fmt.Errorf("invalid URL")
	}
	u := b.ResolveReference(r)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	return u.String(), nil
}

// NextLink returns the target of the rel="next" link in RFC 8288 Link header
// values, or "". It accepts several links per header and several headers,
// quoted and unquoted rel values, and rel lists ("next last").
func NextLink(values []string) string {
	for _, h := range values {
		for _, link := range splitLinks(h) {
			link = strings.TrimSpace(link)
			if !strings.HasPrefix(link, "<") {
				continue
			}
			end := strings.IndexByte(link, '>')
			if end < 0 {
				continue
			}
			target := link[1:end]
			for _, param := range strings.Split(link[end+1:], ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(param), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
					continue
				}
				v = strings.Trim(strings.TrimSpace(v), `"`)
				for _, rel := range strings.Fields(v) {
					if strings.EqualFold(rel, "next") {
						return target
					}
				}
			}
		}
	}
	return ""
}

// splitLinks splits a Link header on the commas between links, not those
// inside <...> or quotes.
func splitLinks(h string) []string {
	var out []string
	inURL, inQuote, startAt := false, false, 0
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c == '<' && !inQuote:
			inURL = true
		case c == '>' && !inQuote:
			inURL = false
		case c == '"' && !inURL:
			inQuote = !inQuote
		case c == ',' && !inURL && !inQuote:
			out = append(out, h[startAt:i])
			startAt = i + 1
		}
	}
	return append(out, h[startAt:])
}
