package httpsource

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/failpoint"
	idsync "github.com/idemsync/idemsync/sync"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/tidwall/gjson"
	"golang.org/x/time/rate"
)

// RetryEvent describes a retry about to wait; the progress bar shows it.
type RetryEvent struct {
	Attempt int
	Wait    time.Duration
	Reason  string
}

var _ contract.PageSource = (*Fetcher)(nil)

// Fetcher requests pages with the job's source and retry settings: classified
// retries with capped exponential backoff and jitter, Retry-After honoured,
// a shared rate limit, bodies bounded by max_body and validated as JSON.
type Fetcher struct {
	cfg     Config
	http    *http.Client
	logger  *slog.Logger
	rlog    retryablehttp.LeveledLogger
	limiter *rate.Limiter
	// pausedUntil (UnixNano) holds all requests after a 429.
	pausedUntil atomic.Int64
	// foreignWarned is set once a request left the source's origin.
	foreignWarned atomic.Bool
	// plain sends a request as is; authed (SetAuth) authenticates it first.
	plain, authed http.RoundTripper
	// OnRetry, when set, is called before each retry wait.
	OnRetry func(RetryEvent)
}

// Config is what a Fetcher needs of a job: its source and retry blocks,
// the secrets to redact, and the query parameter that carries the
// pagination position (a next URL's own value of it wins over the query a
// request would otherwise get).
type Config struct {
	Source        idsync.Source
	Retry         idsync.Retry
	Secrets       *idsync.Redactor
	PositionParam string
}

// ConfigOf is the Config of a loaded job.
func ConfigOf(job *idsync.Job) Config {
	return Config{Source: job.Source, Retry: job.Retry, Secrets: job.Secrets, PositionParam: job.Pagination.Param}
}

// NewFetcher builds a fetcher. The HTTP client verifies TLS unless the
// source opts out, and never carries the source's headers to another
// origin.
func NewFetcher(cfg Config, logger *slog.Logger) *Fetcher {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.Source.InsecureSkipTLSVerify {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // explicit per-job opt-out, warned about
		logger.Warn("TLS certificate verification is OFF for this job (source.insecure_skip_tls_verify)")
	}
	f := &Fetcher{cfg: cfg, logger: logger, rlog: retryLogger{log: logger, red: cfg.Secrets}, plain: tr}
	if cfg.Source.RateLimit > 0 {
		f.limiter = newLimiter(cfg.Source.RateLimit)
	}
	f.http = &http.Client{
		Transport:     &limitedTransport{base: &originTransport{f: f}, f: f},
		CheckRedirect: f.checkRedirect,
		// No Client.Timeout: it would count the rate limit's waits;
		// limitedTransport bounds each attempt after them.
	}
	return f
}

// limitedTransport holds every attempt until the job's shared pause (set by
// a 429) is over and the rate limiter grants it.
type limitedTransport struct {
	base http.RoundTripper
	f    *Fetcher
}

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if until := t.f.pausedUntil.Load(); until > 0 {
		if d := time.Until(time.Unix(0, until)); d > 0 {
			timer := time.NewTimer(d)
			select {
			case <-req.Context().Done():
				timer.Stop()
				return nil, req.Context().Err()
			case <-timer.C:
			}
		}
	}
	if t.f.limiter != nil {
		if err := t.f.limiter.Wait(req.Context()); err != nil {
			return nil, err
		}
	}
	failpoint.Hit("request")
	return timedRoundTrip(t.base, req, t.f.cfg.Source.Timeout.Duration)
}

// newLimiter enforces source.rate_limit as users and APIs count it: at most
// rate requests start in any one second, across every worker. The token
// bucket has a burst of 1 (a burst of rate would let almost twice the rate
// through in one second) and runs 1% slow, so that an API counting
// arrivals after network jitter still never sees more than the limit.
func newLimiter(perSecond float64) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(perSecond/1.01), 1)
}

// pauseAll holds every request of the job (all workers) for d: a 429 slows
// the whole job down instead of each worker retrying into the limit.
func (f *Fetcher) pauseAll(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := f.pausedUntil.Load()
		if cur >= until || f.pausedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// attempt carries what CheckRetry learned about the latest attempt.
type attempt struct {
	n           int
	status      int
	body        []byte
	reason      string
	contentType string
	retryAfter  time.Duration
	hasAfter    bool
	tooLarge    bool
	tooDeep     bool
	notJSON     bool   // a 2xx body that is no JSON at all (an HTML page)
	refused     string // why a 2xx error payload is a GraphQL request error (errorPayload)
}

// Fetch sends r with retries and returns the page. Errors are *contract.Error
// of class Transient for failures that exhausted their retries and
// Permanent for the others; both name the status or cause and a body excerpt with
// secrets redacted. A cancelled ctx returns ctx's error.
func (f *Fetcher) Fetch(ctx context.Context, r contract.Request) (*contract.Response, error) {
	src := f.cfg.Source
	rc := f.cfg.Retry
	st := &attempt{}
	rawURL := r.URL
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" && !f.mayFollow(u) {
		e := f.refuse("the next page", u)
		e.Msg = fmt.Sprintf("%s %s: %s", src.Method, f.redact(rawURL), e.Msg)
		return nil, e
	}
	req, err := f.newRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	c := f.client(ctx, st, rawURL)
	ctx2, cancel := context.WithTimeout(ctx, time.Duration(rc.Attempts)*(src.Timeout.Duration+rc.MaxWait.Duration)+time.Minute)
	defer cancel()
	req = req.WithContext(ctx2)
	resp, err := c.Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	where := fmt.Sprintf("%s %s", src.Method, f.redact(rawURL))
	if err := f.failure(st, where, err); err != nil {
		return nil, err
	}
	out := &contract.Response{URL: rawURL, Status: st.status, Header: resp.Header, Body: st.body, Attempts: st.n}
	if st.status == http.StatusNoContent {
		out.Body = nil // an empty page
		return out, nil
	}
	recs, err := f.records(st.body)
	if err != nil {
		return nil, contract.Errorf(contract.Permanent, "%s: %w", where, err)
	}
	out.Records = recs
	out.Raw = f.rawCount(st.body, recs)
	return out, nil
}

// newRequest builds the request r names with the source's method, body
// (with the position's values set in it) and headers (the configured
// headers only for the source's own origin; the position's header always).
// An invalid URL or a body the position cannot be set in fails with exit
// code 1.
func (f *Fetcher) newRequest(ctx context.Context, r contract.Request) (*retryablehttp.Request, error) {
	src := f.cfg.Source
	rawURL := r.URL
	body, err := requestBody(src.Body, r.Body)
	if err != nil {
		return nil, contract.Errorf(contract.Permanent, "build request body: %v", err)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, src.Method, rawURL, rd)
	if err != nil {
		return nil, contract.Errorf(contract.Permanent, "build request for %s: invalid URL", f.redact(rawURL))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Header)) {
		req.Header.Set(k, r.Header[k])
	}
	if f.sameOrigin(rawURL) {
		for _, k := range slices.Sorted(maps.Keys(src.Headers)) {
			if _, set := r.Header[k]; !set { // a child's header with its parent's values is in r.Header
				req.Header.Set(k, src.Headers[k])
			}
		}
	} else {
		f.warnForeignOrigin(rawURL)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "idemsync/"+idsync.Version)
	}
	return req, nil
}

// client is the retrying client for one Fetch: st records each attempt,
// and each retry is logged, reported to OnRetry and, after a 429, pauses
// every request of the fetcher.
func (f *Fetcher) client(ctx context.Context, st *attempt, rawURL string) *retryablehttp.Client {
	rc := f.cfg.Retry
	return &retryablehttp.Client{
		HTTPClient:   f.http,
		Logger:       f.rlog,
		RetryWaitMin: rc.MinWait.Duration,
		RetryWaitMax: rc.MaxWait.Duration,
		RetryMax:     rc.Attempts - 1,
		CheckRetry: func(ctx context.Context, resp *http.Response, err error) (bool, error) {
			return f.checkRetry(ctx, st, resp, err)
		},
		Backoff: func(min, max time.Duration, n int, resp *http.Response) time.Duration {
			wait := idsync.Backoff(min, max, n, st.retryAfter, st.hasAfter)
			if ctx.Err() != nil {
				return wait // the run is over: the wait ends at once, unannounced
			}
			if st.status == http.StatusTooManyRequests {
				f.pauseAll(wait)
			}
			f.logger.Warn("retrying request", "url", f.redact(rawURL), "attempt", n+1, "of", rc.Attempts, "wait", wait.Round(time.Millisecond).String(), "reason", st.reason)
			if f.OnRetry != nil {
				f.OnRetry(RetryEvent{Attempt: n + 1, Wait: wait, Reason: st.reason})
			}
			return wait
		},
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
}

// failure turns the last attempt of a Fetch into its error (nil when it
// succeeded); err is what the client returned.
func (f *Fetcher) failure(st *attempt, where string, err error) error {
	src := f.cfg.Source
	rc := f.cfg.Retry
	tries := fmt.Sprintf("after %d attempt(s)", st.n)
	switch {
	case st.tooLarge:
		return contract.Errorf(contract.Permanent, "%s: response body larger than source.max_body (%d bytes)", where, src.MaxBody)
	case st.tooDeep:
		return &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("%s: response JSON is nested deeper than %d levels", where, MaxJSONDepth),
			Hint: "the API sent a pathologically nested body; nothing was written and the checkpoint is intact"}
	case st.notJSON:
		msg := fmt.Sprintf("%s: HTTP %d body is not JSON%s", where, st.status, describeContentType(st.contentType, st.body))
		if ex := f.excerpt(st.body); ex != "" {
			msg += ": " + ex
		}
		return &contract.Error{Class: contract.Permanent, Msg: msg,
			Hint: "the API answered with a page that is not JSON (a login or error page?): check source.url and the credentials; not retried"}
	case err != nil && st.status == 0:
		return f.transportError(where, tries, err)
	case st.refused != "":
		return &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("%s: %s: %s", where, st.refused, st.reason),
			Hint: "the GraphQL server refused the request itself (its query, variables or persisted query): sending it again cannot help; fix source.body (not retried)"}
	case st.reason != "" && st.status >= 200 && st.status < 300:
		return &contract.Error{Class: contract.Transient, Msg: fmt.Sprintf("%s: %s %s", where, st.reason, tries),
			Hint: "the API answered 2xx with a body idemsync could not use; the checkpoint is intact, run again later"}
	case st.status < 200 || st.status >= 300:
		msg := fmt.Sprintf("%s: HTTP %d %s", where, st.status, http.StatusText(st.status))
		if len(st.body) > 0 && (jsonDepthExceeds(st.body, MaxJSONDepth) || !gjson.ValidBytes(st.body)) {
			msg += describeContentType(st.contentType, st.body)
		}
		if ex := f.excerpt(st.body); ex != "" {
			msg += ": " + ex
		}
		if slices.Contains(rc.OnStatus, st.status) {
			return &contract.Error{Class: contract.Transient, Msg: msg + " " + tries, Hint: "the API kept failing; the checkpoint is intact, run again later", Status: st.status}
		}
		return &contract.Error{Class: contract.Permanent, Msg: msg, Hint: f.statusHint(st.status), Status: st.status}
	}
	return nil
}

// checkRetry classifies one attempt and reads a successful body, so that
// truncated or invalid JSON is retried like any transient failure.
func (f *Fetcher) checkRetry(ctx context.Context, st *attempt, resp *http.Response, err error) (bool, error) {
	st.n++
	st.status, st.body, st.reason, st.hasAfter, st.retryAfter, st.contentType, st.refused = 0, nil, "", false, 0, "", ""
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		if permanentTransportError(err) {
			return false, err
		}
		st.reason = f.redact(shortErr(err))
		return true, nil
	}
	st.status = resp.StatusCode
	st.contentType = resp.Header.Get("Content-Type")
	if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		st.retryAfter, st.hasAfter = d, true
	}
	limit := int64(f.cfg.Source.MaxBody)
	data, rerr := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(nil))
	if ctx.Err() != nil { // the run ended while the body arrived: no retry, nothing to announce
		return false, ctx.Err()
	}
	if int64(len(data)) > limit {
		st.tooLarge = true
		return false, fmt.Errorf("body too large")
	}
	st.body = data
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		if slices.Contains(f.cfg.Retry.OnStatus, resp.StatusCode) {
			st.reason = fmt.Sprintf("HTTP %d", resp.StatusCode)
			return true, nil
		}
		return false, nil
	}
	return f.checkBody(st, resp.StatusCode, data, rerr)
}

// checkBody classifies the body of a 2xx answer (data, read with error
// rerr): cut short, invalid JSON and an error payload are retried; a body
// nested too deep or no JSON at all fail at once.
func (f *Fetcher) checkBody(st *attempt, status int, data []byte, rerr error) (bool, error) {
	if rerr != nil {
		st.reason = "body cut short: " + f.redact(shortErr(rerr))
		return true, nil
	}
	if status == http.StatusNoContent {
		return false, nil // no body: an empty page
	}
	// gjson validates and queries recursively: a body nested millions of
	// levels deep would overflow the stack and kill the process, so such a
	// body is refused before gjson sees it.
	if jsonDepthExceeds(data, MaxJSONDepth) {
		st.tooDeep = true
		return false, errors.New("JSON nested too deep")
	}
	if !gjson.ValidBytes(data) {
		if notJSON(data, st.contentType) {
			st.notJSON = true
			return false, errors.New("body is not JSON")
		}
		st.reason = "invalid JSON body" + describeContentType(st.contentType, data)
		return true, nil
	}
	return f.errorPayload(st, data), nil
}

func (f *Fetcher) redact(s string) string { return f.cfg.Secrets.Redact(s) }

// excerpt returns at most 200 bytes of a body, on one line, redacted
// before it is cut.
func (f *Fetcher) excerpt(b []byte) string { return f.cfg.Secrets.Excerpt(string(b), 200) }
