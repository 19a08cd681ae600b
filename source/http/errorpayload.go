package httpsource

import (
	"fmt"
	"mime"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// graphQLRequestCodes are the errors[].extensions.code values with which
// GraphQL servers (Apollo, graphql-yoga, Hot Chocolate) refuse a request
// before running it: the same request is refused again, so it is not
// retried (docs/job-file.md, "Error payloads in a 2xx body").
var graphQLRequestCodes = []string{
	"GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED", "BAD_USER_INPUT",
	"PERSISTED_QUERY_NOT_FOUND", "PERSISTED_QUERY_NOT_SUPPORTED",
}

// graphQLThrottleCodes are the errors[].extensions.code (or, GitHub's,
// errors[].type) values with which a GraphQL server or its gateway says
// it is rate limiting the caller. Such an answer has errors and no data
// (the query did not run) yet is no request error: the same request
// succeeds once the limit refills, so it is retried (docs/job-file.md,
// "Error payloads in a 2xx body").
var graphQLThrottleCodes = []string{"THROTTLED", "RATE_LIMITED"}

// nullPageErrorKeys are the top-level keys that, not empty, make a null
// or empty records value an error answer rather than an empty page.
var nullPageErrorKeys = []string{"error", "errors", "error_message", "errorMessage", "fault"}

// errorPayload classifies a valid 2xx JSON body by its error payload
// (docs/job-file.md, "Error payloads in a 2xx body"). With an error_path,
// a GraphQL request error in the body's top-level errors fails at once
// (st.refused), whatever the path selects (a filter such as
// errors.#(path.#<3)# drops errors without a path, the request's); any
// other payload at the path is retried (st.reason alone). Without one,
// and with one, a null or empty records value next to an error is
// retried too, and so is a problem report (application/problem+json).
func (f *Fetcher) errorPayload(st *attempt, data []byte) {
	if mt, _, _ := mime.ParseMediaType(st.contentType); mt == "application/problem+json" {
		// An RFC 9457 problem report is an error whatever the status says:
		// its records, if any, are no page (docs/job-file.md).
		st.reason = "Content-Type application/problem+json (an error report): " + f.excerpt(data)
		return
	}
	if p := f.cfg.Source.ErrorPath; p != "" {
		why, errs := graphQLRequestError(data, underData(f.cfg.Source.Records))
		if why != "" || graphQLThrottled(errs) {
			// A throttle is retried whatever the path selects too (a
			// filter on path drops its pathless error, and no data is
			// left to hold the records).
			st.reason = "error payload at errors: " + f.excerpt([]byte(errs.Raw))
			st.refused = why
			return
		}
		if v := gjson.GetBytes(data, p); errorValue(v) {
			st.reason = fmt.Sprintf("error payload at %s: %s", p, f.excerpt([]byte(v.Raw)))
			return
		}
	}
	// A missing records value is a permanent error already (records), one
	// that names the body's top-level keys. An empty list next to an
	// error is no more the end than a null one: it ends a cursor walk
	// (no next cursor) and would let its sweep run.
	if r := f.cfg.Source.Records; r != "" {
		is := ""
		if sc := st.scan; sc.located {
			switch {
			case !sc.found:
			case data[sc.start] == 'n':
				is = "null"
			case data[sc.start] == '[' && len(sc.elems) == 0:
				is = "empty"
			}
		} else if v := gjson.GetBytes(data, r); v.Type == gjson.Null && v.Exists() {
			is = "null"
		} else if v.IsArray() && len(v.Array()) == 0 {
			is = "empty"
		}
		if is == "" {
			return
		}
		for _, k := range nullPageErrorKeys {
			if v := gjson.GetBytes(data, gjson.Escape(k)); errorValue(v) {
				st.reason = fmt.Sprintf("records path %s is %s next to an error payload at %s: %s", r, is, k, f.excerpt([]byte(v.Raw)))
				return
			}
		}
	}
}

// errorValue reports whether v is an error payload: present and not null,
// false, "", {} or [].
func errorValue(v gjson.Result) bool {
	return v.Exists() && v.Type != gjson.Null && v.String() != "" && v.Raw != "false" && v.Raw != "{}" && v.Raw != "[]"
}

// graphQLRequestError says why the body's top-level errors (returned) are
// a GraphQL request error, or "": an error with a code of
// graphQLRequestCodes, or, when the records are under data (gql: a
// GraphQL answer's are), GraphQL errors (objects with a message) without
// a data key, which a GraphQL server sends only when it refused the
// request before running it (a parse or validation error, an unknown
// persisted query), unless one of them says the caller is rate limited
// (graphQLThrottleCodes). A field's error comes with data (null too).
func graphQLRequestError(data []byte, gql bool) (string, gjson.Result) {
	errs := gjson.GetBytes(data, "errors")
	if !errs.IsArray() || !errorValue(errs) {
		return "", errs
	}
	code, shaped := "", true
	errs.ForEach(func(_, e gjson.Result) bool {
		if c := e.Get("extensions.code").String(); code == "" && slices.Contains(graphQLRequestCodes, c) {
			code = c
		}
		shaped = shaped && e.Get("message").Type == gjson.String
		return true
	})
	switch {
	case code != "":
		return "GraphQL " + code, errs
	case gql && shaped && !graphQLThrottled(errs) && !gjson.GetBytes(data, "data").Exists():
		return "GraphQL request error (errors and no data)", errs
	}
	return "", errs
}

// graphQLThrottled reports whether one of the errors errs (a body's
// top-level errors) says the caller is rate limited (graphQLThrottleCodes).
func graphQLThrottled(errs gjson.Result) bool {
	throttled := false
	if errs.IsArray() {
		errs.ForEach(func(_, e gjson.Result) bool {
			throttled = slices.Contains(graphQLThrottleCodes, strings.ToUpper(e.Get("extensions.code").String())) ||
				slices.Contains(graphQLThrottleCodes, strings.ToUpper(e.Get("type").String()))
			return !throttled
		})
	}
	return throttled
}

// underData reports whether a records path starts at the body's data key,
// where a GraphQL answer holds its results.
func underData(records string) bool {
	return records == "data" || strings.HasPrefix(records, "data.")
}
