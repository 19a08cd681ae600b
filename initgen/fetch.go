package initgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	idsync "github.com/idemsync/idemsync/sync"
)

// fetchTimeout bounds init's one request.
const fetchTimeout = 30 * time.Second

// client is init's HTTP client: Go's default, but a redirect is sent with
// no Referer, which would carry the URL given to init, query secrets
// included, to whatever origin the redirect names (docs/job-file.md,
// "Starting from idemsync init").
var client = &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	req.Header.Del("Referer")
	return nil
}}

// Fetch requests u once (no retries: a person is waiting) and parses its
// JSON body. Errors name the URL and status: exit 3 for the statuses a
// later try may get past (408, 429, 5xx) and network errors, exit 1
// otherwise.
func Fetch(ctx context.Context, u *url.URL) (*Page, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, contract.Errorf(contract.Invalid, "init: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "idemsync/"+idsync.Version)
	resp, err := client.Do(req)
	if err != nil {
		return nil, contract.Errorf(contract.Transient, "init: GET %s: %w", RedactQuery(u), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, idsync.DefaultMaxBody+1))
	if err != nil {
		return nil, contract.Errorf(contract.Transient, "init: GET %s: read body: %w", RedactQuery(u), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		code := contract.Permanent
		if resp.StatusCode == 408 || resp.StatusCode == 429 || resp.StatusCode >= 500 {
			code = contract.Transient
		}
		e := &contract.Error{Class: code, Msg: fmt.Sprintf("init: GET %s: HTTP %d", RedactQuery(u), resp.StatusCode)}
		if resp.StatusCode == 401 || resp.StatusCode == 403 {
			e.Hint = "the API wants credentials: write the job file from a public endpoint or by hand, with source.headers or source.auth (docs/job-file.md)"
		}
		return nil, e
	}
	if len(body) > idsync.DefaultMaxBody {
		return nil, contract.Errorf(contract.Permanent, "init: GET %s: body larger than %d bytes", RedactQuery(u), idsync.DefaultMaxBody)
	}
	if !gjson.ValidBytes(body) {
		return nil, contract.Errorf(contract.Permanent, "init: GET %s: the body is not JSON (Content-Type %q)", RedactQuery(u), resp.Header.Get("Content-Type"))
	}
	return &Page{url: u, header: resp.Header, body: gjson.ParseBytes(body)}, nil
}

// ShownURL is how a message or a written file names a URL or path given
// to init: an http(s) URL as RedactQuery; anything else with a URL's
// password redacted (by pattern when it does not parse) and cut at its
// query (docs/job-file.md, "What is and is not a secret").
func ShownURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return RedactQuery(u)
	}
	if !strings.Contains(raw, "://") {
		return raw // a file's path
	}
	shown, _, hasQuery := strings.Cut(sqlkit.RedactURL(raw), "?")
	if hasQuery {
		shown += "?…"
	}
	return shown
}

// RedactQuery is u without its query's values, which may hold a key.
func RedactQuery(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			q.Set(k, "…")
		}
		c.RawQuery = strings.ReplaceAll(q.Encode(), "%E2%80%A6", "…")
	}
	return c.String()
}
