package contract

import (
	"context"
	"net/http"
	"net/url"

	"github.com/tidwall/gjson"
)

// PageSource is what the engine consumes from an API: one request in, one
// validated response out, plus the two URL rules pagination depends on.
// (Source, the type, is the job's source block.)
// The HTTP implementation is source/http's Fetcher; its wiring (auth,
// retry and request hooks) stays on the concrete type. Implementations
// must be safe for concurrent use: page and offset styles keep several
// requests in flight.
type PageSource interface {
	// Fetch sends req (its URL as BuildURL returned it) and returns the
	// page, its records extracted and counted. Failures are *Error values
	// carrying their class (Transient once retries are exhausted,
	// Permanent otherwise); a cancelled ctx returns ctx's error.
	Fetch(ctx context.Context, req Request) (*Response, error)
	// BuildURL returns the URL of a request: base (source.url, or a next
	// URL when isNext) with the source's fixed query and params added. It
	// returns an error naming the URL (redacted) when base is not one.
	BuildURL(base string, params url.Values, isNext bool) (string, error)
	// CheckpointURL returns a next-page URL as the checkpoint may store it:
	// without the secrets BuildURL puts back on every request. A URL it
	// cannot parse is returned unchanged.
	CheckpointURL(raw string) string
}

// Request is one page request as pagination builds it: the URL with the
// query, and the position where pagination.in puts it otherwise.
type Request struct {
	URL    string            // request URL, query included (BuildURL)
	Header map[string]string // headers carrying the position (pagination.in: header); nil when none
	Body   []BodyValue       // values set in source.body (pagination.in: body); nil when none
}

// BodyValue is one value set at a path of the request's JSON body.
type BodyValue struct {
	Path  string // a path in source.body, dot-separated (variables.after)
	Value any    // a string, an int64 (a page number or offset), or json.RawMessage (a cursor that is a JSON array or object)
}

// Response is one fetched page: its body, validated as JSON, and its records.
type Response struct {
	URL     string // request URL (not redacted; redact before printing)
	Status  int
	Header  http.Header
	Body    []byte
	Records []gjson.Result // the records array's elements
	// Raw is how many elements the array the API returned holds, before
	// any GJSON filter, modifier or flatten in source.records: what the
	// short-page rule counts.
	Raw      int
	Attempts int
}
