package sync

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile/spec"
)

// parentRequest puts the parent row's values where a child's source names
// them with {parent.COL}: in source.url (path-escaped in the path,
// query-escaped in the query), in source.query values (sent as request
// parameters, encoded with the URL), raw in source.headers, and JSON-encoded
// in the string values of source.body. It returns the request's base URL.
func (p *pager) parentRequest(req *contract.Request, params url.Values, row string) (string, error) {
	src := &p.job.Source
	path, query, hasQuery := strings.Cut(src.URL, "?")
	base, err := substParent(path, row, url.PathEscape)
	if err != nil {
		return "", err
	}
	if hasQuery {
		q, err := substParent(query, row, url.QueryEscape)
		if err != nil {
			return "", err
		}
		base += "?" + q
	}
	raw := func(s string) string { return s }
	for k, vs := range src.Query {
		if _, set := params[k]; set || !hasRef(vs...) {
			continue
		}
		out := make([]string, len(vs))
		for i, v := range vs {
			if out[i], err = substParent(v, row, raw); err != nil {
				return "", err
			}
		}
		params[k] = out
	}
	for k, v := range src.Headers {
		if !hasRef(v) {
			continue
		}
		if req.Header == nil {
			req.Header = map[string]string{}
		}
		if _, set := req.Header[k]; set {
			continue
		}
		if req.Header[k], err = substParent(v, row, raw); err != nil {
			return "", err
		}
		if i := strings.IndexFunc(req.Header[k], unsendable); i >= 0 {
			return "", &unsendableError{header: k, char: rune(req.Header[k][i])}
		}
	}
	if hasRef(string(src.Body)) && gjson.Valid(string(src.Body)) {
		var sets []contract.BodyValue
		var walkErr error
		bodyStrings(gjson.Parse(string(src.Body)), "", func(path, s string) {
			if !hasRef(s) || walkErr != nil {
				return
			}
			v, err := substParent(s, row, raw)
			walkErr = err
			sets = append(sets, contract.BodyValue{Path: path, Value: v})
		})
		if walkErr != nil {
			return "", walkErr
		}
		req.Body = append(sets, req.Body...)
	}
	return base, nil
}

// unsendableError is a parent value put in a header that no HTTP request
// can carry: a bad record of that parent, not a failure to retry
// (docs/job-file.md, "Parent → child fan-out").
type unsendableError struct {
	header string
	char   rune
}

func (e *unsendableError) Error() string {
	return fmt.Sprintf("source.headers %s: the parent's value holds %q, which no HTTP header can carry", e.header, e.char)
}

// unsendable reports whether c may not appear in an HTTP header field
// value: the control characters but horizontal tab (RFC 9110 §5.5).
func unsendable(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }

// hasRef reports whether any of vs holds a {parent.COL}.
func hasRef(vs ...string) bool {
	for _, v := range vs {
		if parentRef.MatchString(v) {
			return true
		}
	}
	return false
}

// bodyStrings calls f with the path and value of every string in v.
func bodyStrings(v gjson.Result, path string, f func(path, s string)) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch {
	case v.IsObject():
		v.ForEach(func(k, e gjson.Result) bool {
			bodyStrings(e, join(EscapePath(k.String())), f)
			return true
		})
	case v.IsArray():
		for i, e := range v.Array() {
			bodyStrings(e, join(strconv.Itoa(i)), f)
		}
	case v.Type == gjson.String:
		f(path, v.Str)
	}
}

// CheckParentBody reports an error when source.body names {parent.COL}
// where a child's request cannot put the value: in a body that is not
// JSON, or in a JSON key rather than a string value.
func CheckParentBody(body spec.BodyText) error {
	if !hasRef(string(body)) {
		return nil
	}
	if !gjson.Valid(string(body)) {
		return fmt.Errorf("{parent.COL} is only used in a JSON body (a mapping), in its string values")
	}
	n := 0
	bodyStrings(gjson.Parse(string(body)), "", func(_, s string) { n += len(parentRef.FindAllString(s, -1)) })
	if n != len(parentRef.FindAllString(string(body), -1)) {
		return fmt.Errorf("{parent.COL} is only used in the string values of a JSON body, not in its keys")
	}
	return nil
}
