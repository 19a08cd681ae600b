package jobfile

import (
	"fmt"
	"maps"
	"slices"
	"time"

	idsync "github.com/idemsync/idemsync/sync"
	"github.com/idemsync/idemsync/sync/paging"
	"github.com/tidwall/gjson"

	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// sourceDefaults checks the source block's URL, method and body, keeps
// the credential headers' values as secrets and checks the auth block (the rules fill and
// check timeout, body limit, concurrency and rate limit).
func (j loading) sourceDefaults(bad func(key, format string, args ...any)) {
	s := &j.Source
	if s.URL == "" {
		bad("source.url", "is required")
	} else if err := paging.ValidURL(s.URL); err != nil {
		bad("source.url", "%v", err)
	} else if u, _ := url.Parse(s.URL); u.User != nil {
		if pw, ok := u.User.Password(); ok {
			j.Secrets.Add(pw)
		}
	}
	s.Method = strings.ToUpper(s.Method)
	if s.Body != "" && s.Method != http.MethodPost {
		bad("source.body", "is only allowed with method: POST")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		// One HTTP cannot send would fail every run as a network error.
		switch {
		case k == "":
			bad("source.headers", "a header name cannot be empty")
		case !headerName(k):
			bad("source.headers."+k, notHeaderName)
		case !headerValue(s.Headers[k]):
			bad("source.headers."+k, notHeaderValue)
		}
		if idsync.CredentialName(k) { // a ${VAR} in any header is a secret already (secretPath)
			j.Secrets.Add(s.Headers[k])
		}
	}
	j.followDefaults(bad)
	j.authDefaults(bad)
}

// incrementalDefaults fills and checks the incremental block, when there
// is one.
func (j loading) incrementalDefaults(bad func(key, format string, args ...any)) {
	if inc := j.Incremental; inc != nil {
		if st := j.Pagination.Style; paging.StyleKeepsMark(st) {
			bad("incremental", "is not used with style %s (%s keeps its own mark)", st, st)
		}
		if inc.Field == "" {
			bad("incremental.field", "is required")
		}
		if inc.Param == "" {
			bad("incremental.param", "is required")
		}
		if inc.Step.Duration > 0 && inc.EndParam == "" {
			bad("incremental.step", "needs incremental.end_param: each window sends its upper bound")
		}
		if inc.Concurrency > 1 && inc.Step.Duration <= 0 {
			bad("incremental.concurrency", "needs incremental.step: windows are what is walked at once")
		}
		if inc.Step.Duration > 0 && inc.Step.Duration < time.Second {
			bad("incremental.step", "%s is shorter than a second", inc.Step.Duration)
		}
		if err := paging.CheckOverlap(inc.Overlap, inc.Initial, inc.Format); err != nil {
			bad("incremental.overlap", "%v", err)
		}
		if inc.Initial != "" {
			if _, err := paging.CheckMark(inc.Initial); err != nil {
				bad("incremental.initial", "%v", err)
			}
		}
		if err := paging.CheckMarkFormat(inc.Format); err != nil {
			bad("incremental.format", "%v", err)
		}
	}
}

// retryDefaults fills retry.max_wait, whose default depends on min_wait,
// and checks the two against each other.
func (j loading) retryDefaults(bad func(key, format string, args ...any)) {
	r := &j.Retry
	if r.MaxWait.Duration == 0 {
		r.MaxWait.Duration = max(idsync.DefaultMaxWait, r.MinWait.Duration)
	}
	if r.MaxWait.Duration < r.MinWait.Duration {
		bad("retry.max_wait", "must not be less than retry.min_wait")
	}
}

// bodyDefaults checks what the request body must be for the position to
// go in it (pagination.in: body: a POST whose source.body, if any, is a
// JSON object), and makes error_path default to errors for every POST
// (docs/job-file.md, "error_path"): GraphQL servers answer a failed query
// with 200 and an errors array, whether the body carries a query or a
// persisted query's hash. An error_path written in the file, "" included
// (which turns the check off), is kept.
func (j loading) bodyDefaults(bad paging.BadFunc, lines map[string]int) {
	s, pg := &j.Source, &j.Pagination
	body := string(s.Body)
	isObject := strings.HasPrefix(strings.TrimSpace(body), "{") && gjson.Valid(body)
	if pg.In == paging.InBody {
		if s.Method != http.MethodPost {
			bad("pagination.in", "body needs source.method: POST")
		}
		if body != "" && !isObject {
			bad("source.body", "must be a JSON object (or a YAML mapping) for the position to be set in it (pagination.in: body)")
		}
		if why := bodyParamProblem(pg.Param, body); pg.Param != "" && why != "" {
			bad("pagination.param", "%s", why)
		}
	}
	if _, written := lines["source.error_path"]; !written && s.Method == http.MethodPost {
		s.ErrorPath = "errors"
	}
}

// A header name or value HTTP cannot send would fail every run as a
// network error: the loader refuses it (docs/job-file.md, source).
const (
	notHeaderName  = "is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)"
	notHeaderValue = "its value holds a line break or another control character, which a header cannot carry"
)

// headerName reports whether s is a header name (RFC 9110, token).
func headerName(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return false
		}
		return !strings.ContainsRune("!#$%&'*+-.^_`|~", r)
	}) < 0
}

// headerValue reports whether s can be sent as a header's value: no
// control character but the tab.
func headerValue(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) < 0
}

// bodyParamProblem says why the position cannot be set at the dot path
// param in body (a JSON object, or ""), or "": a part of the path that is
// empty or that sjson reads as a wildcard, a count or a modifier (the
// position would never be set: every page would send the first page's
// body), or a value of the body on the way that is a string, number or
// boolean (the position would replace what the body says there) or a
// list the next part does not index (docs/pagination.md, "Where the
// position goes"). A path with escaped dots is only checked for those
// characters.
func bodyParamProblem(param, body string) string {
	if strings.ContainsAny(param, "*?#|@") {
		return fmt.Sprintf("%q holds a wildcard, # or modifier: with in: body it is a plain dot path in source.body, such as variables.after", param)
	}
	parts := strings.Split(param, ".")
	if slices.Contains(parts, "") {
		return fmt.Sprintf("%q has an empty part: with in: body it is a plain dot path in source.body, such as variables.after", param)
	}
	if strings.Contains(param, `\`) || body == "" {
		return ""
	}
	v := gjson.Parse(body)
	for i, part := range parts[:len(parts)-1] {
		at := strings.Join(parts[:i+1], ".")
		switch {
		case v.IsObject():
			v = v.Get(gjson.Escape(part))
		case v.IsArray():
			n, err := strconv.Atoi(part)
			if k := len(v.Array()); err != nil || n < 0 || n >= k {
				return fmt.Sprintf("%q: source.body at %s is a list of %d, and %q is none of its indexes", param, strings.Join(parts[:i], "."), k, part)
			}
			v = v.Array()[n]
		}
		if !v.Exists() || v.Type == gjson.Null {
			return ""
		}
		if !v.IsObject() && !v.IsArray() {
			kind := map[gjson.Type]string{gjson.String: "a string", gjson.Number: "a number", gjson.True: "a boolean", gjson.False: "a boolean"}[v.Type]
			return fmt.Sprintf("%q: source.body at %s is %s: the position would replace it (make it a mapping, or put the position elsewhere)", param, at, kind)
		}
	}
	if v.IsArray() {
		last := parts[len(parts)-1]
		if n, err := strconv.Atoi(last); err != nil || n < 0 || n > len(v.Array()) {
			return fmt.Sprintf("%q: source.body at %s is a list of %d, and %q is none of its indexes", param, strings.Join(parts[:len(parts)-1], "."), len(v.Array()), last)
		}
	}
	return ""
}
