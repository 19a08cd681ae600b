package initgen

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/idemsync/idemsync/pagesignal"
	idsync "github.com/idemsync/idemsync/sync"
)

// positionParam reports whether a query parameter's name is that of a
// position in a walk (cursor, after, starting_after, page_token,
// next_token, marker, continue …): not a credential, whatever its name
// holds, and, sent with a value, a page after the first.
func positionParam(name string) bool {
	n := normKey(name)
	if n == "offset" || n == "start" { // numbers: the offset style's, or a date range's start
		return false
	}
	return pagesignal.IsNext(n) || pagesignal.IsToken(n) || strings.HasSuffix(n, "cursor") || strings.HasSuffix(n, "pagetoken")
}

// positionsKept are the decisions for the position parameters of the URL's
// query that the pagination does not set and that carry a value: every
// run would start from that page, and a walk that ends there (the page
// shows no sign of more) would copy it alone, exit 0 over every record
// before it (docs/job-file.md, "What init refuses to guess").
func positionsKept(p *Page, owned []string) []string {
	var out []string
	for _, part := range strings.Split(p.url.RawQuery, "&") {
		k, v, _ := strings.Cut(part, "=")
		name, err := url.QueryUnescape(k)
		if err != nil || v == "" || slices.Contains(owned, name) || !positionParam(name) {
			continue
		}
		out = append(out, fmt.Sprintf("source.url: the URL asks from a position (%s=%s), which every run would start from, leaving out the records before it: delete it from source.url to start from the first page, or keep it if the list starts there", name, v))
	}
	return out
}

// urlSecrets is the source.url line's value for the URL given: its
// password and the values of its query's credential parameters (api_key,
// access_token, X-Key …: idsync.CredentialName, positions aside) written
// as ${NAME_PASSWORD}, ${NAME_API_KEY} …, never in clear text, and the
// variables named (docs/job-file.md, "Starting from idemsync init").
func urlSecrets(p *Page, owned []string, name string) (line string, vars []string) {
	env := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if env == "" || env[0] >= '0' && env[0] <= '9' {
		env = "_" + env
	}
	holders := map[string]string{} // placeholder → variable
	hold := func(suffix string) string {
		v := env + "_" + suffix
		for i := 2; slices.Contains(vars, v); i++ {
			v = fmt.Sprintf("%s_%s_%d", env, suffix, i)
		}
		vars = append(vars, v)
		h := fmt.Sprintf("IDEMSYNCINITSECRET%dX", len(vars))
		holders[h] = v
		return h
	}
	u := *p.url
	if pw, ok := u.User.Password(); ok && pw != "" {
		u.User = url.UserPassword(u.User.Username(), hold("PASSWORD"))
	}
	page := *p
	page.url = &u
	raw := sourceURL(&page, owned)
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		parts := strings.Split(raw[i+1:], "&")
		for j, part := range parts {
			k, v, _ := strings.Cut(part, "=")
			n, err := url.QueryUnescape(k)
			if err != nil || v == "" || positionParam(n) || !idsync.CredentialName(n) {
				continue
			}
			parts[j] = k + "=" + hold(envPart(n))
		}
		raw = raw[:i+1] + strings.Join(parts, "&")
	}
	line = yamlString(raw)
	if len(vars) == 0 {
		return line, nil
	}
	if !strings.HasPrefix(line, `"`) {
		line = strconv.Quote(line)
	}
	for h, v := range holders {
		line = strings.Replace(line, h, "${"+v+"}", 1)
	}
	return line, vars
}

// envPart is a query parameter's name as a part of a variable's name:
// upper case, each run of other characters than letters and digits one _.
func envPart(name string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(name) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if s := b.String(); s != "" && !strings.HasSuffix(s, "_") {
			b.WriteByte('_')
		}
	}
	if s := strings.TrimSuffix(b.String(), "_"); s != "" {
		return s
	}
	return "KEY"
}
