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
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/failpoint"
	"github.com/idemsync/idemsync/jobfile/spec"
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
	retry   *retryablehttp.Client // over http; built once (newRetryClient)
	logger  *slog.Logger
	limiter *rate.Limiter
	// pausedUntil (UnixNano) holds all requests after a 429.
	pausedUntil atomic.Int64
	// foreignWarned is set once a request left the source's origin.
	foreignWarned atomic.Bool
	// plain sends a request as is; authed (SetAuth) authenticates it first.
	plain, authed http.RoundTripper
	// keys are the keys on the body paths the run reads (dupkey.go).
	keys *keyTree
	// OnRetry, when set, is called before each retry wait.
	OnRetry func(RetryEvent)
}

// Config is what a Fetcher needs of a job: its source and retry blocks,
// the secrets to redact, and the query parameter that carries the
// pagination position (a next URL's own value of it wins over the query a
// request would otherwise get), and the body paths the run reads besides
// source's (setting, GJSON path): a page holding a key on their way twice
// is refused (dupkey.go).
type Config struct {
	Source        spec.Source
	Retry         spec.Retry
	Secrets       *idsync.Redactor
	PositionParam string
	Reads         [][2]string
}

// ConfigOf is the Config of a loaded job.
func ConfigOf(job *idsync.Job) Config {
	pg := job.Pagination
	return Config{Source: job.Source, Retry: job.Retry, Secrets: job.Secrets, PositionParam: pg.Param,
		Reads: [][2]string{{"pagination.has_more", pg.HasMore}, {"pagination.next", pg.Next}, {"pagination.next_url", pg.NextURL},
			{"pagination.total", pg.Total}, {"pagination.total_pages", pg.TotalPages}}}
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
	f := &Fetcher{cfg: cfg, logger: logger, plain: tr, keys: newKeyTree(readPaths(cfg))}
	if cfg.Source.RateLimit > 0 {
		f.limiter = newLimiter(cfg.Source.RateLimit)
	}
	f.http = &http.Client{
		Transport:     &attemptTransport{next: &limitedTransport{base: &originTransport{f: f}, f: f}, f: f},
		CheckRedirect: f.checkRedirect,
		// No Client.Timeout: it would count the rate limit's waits;
		// limitedTransport bounds each attempt after them.
	}
	f.retry = f.newRetryClient()
	return f
}

// Close closes the fetcher's idle connections: each fetcher has a
// transport of its own, and a process that runs many jobs (serve) would
// otherwise keep every ended run's keep-alive connections, a descriptor
// each, until the transport's idle timeout (docs/serve.md, "Runs"). A
// request after Close opens a new connection.
func (f *Fetcher) Close() {
	if tr, ok := f.plain.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
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

// Fetch sends r with retries and returns the page. Errors are *contract.Error
// of class Transient for failures that exhausted their retries and
// Permanent for the others; both name the status or cause and a body excerpt with
// secrets redacted. A cancelled ctx returns ctx's error.
func (f *Fetcher) Fetch(ctx context.Context, r contract.Request) (*contract.Response, error) {
	src := f.cfg.Source
	rc := f.cfg.Retry
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
	c := &call{url: rawURL}
	ctx2, cancel := context.WithTimeout(withCall(ctx, c), time.Duration(rc.Attempts)*(src.Timeout.Duration+rc.MaxWait.Duration)+time.Minute)
	defer cancel()
	resp, err := f.retry.Do(req.WithContext(ctx2))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	where := fmt.Sprintf("%s %s", src.Method, f.redact(rawURL))
	if err != nil {
		// giveUp's error, or the fetch's own time ran out during a wait.
		e, ok := err.(*contract.Error)
		if !ok {
			e = f.transportError(fmt.Sprintf("after %d attempt(s)", c.attempts.Load()), err)
		}
		e.Msg = where + ": " + e.Msg
		return nil, e
	}
	at := attemptOf(resp)
	out := &contract.Response{URL: rawURL, Status: at.status, Header: at.header, Body: at.body, Attempts: int(c.attempts.Load())}
	if at.status == http.StatusNoContent {
		out.Body = nil // an empty page
		return out, nil
	}
	recs, err := f.recordsOf(at.body, at.scan)
	if err != nil {
		return nil, contract.Errorf(contract.Permanent, "%s: %w", where, err)
	}
	out.Records = recs
	out.Raw = f.rawCount(at.body, recs)
	return out, nil
}

// newRequest builds the request r names with the source's method, body
// (with the position's values set in it) and headers (the configured
// headers, a child's with its parent's values too, only for the source's
// own origin; the position's header always).
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
	same := f.sameOrigin(rawURL)
	for _, k := range slices.Sorted(maps.Keys(r.Header)) {
		if _, configured := src.Headers[k]; configured && !same {
			continue // a configured header with its parent's values: the job's own
		}
		if strings.ContainsFunc(r.Header[k], func(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }) {
			// The API's cursor (or a parent's value) holds a line break:
			// no request can carry it, now or on a later run.
			return nil, &contract.Error{Class: contract.Permanent,
				Msg:  fmt.Sprintf("cannot send header %s: its value %q holds a line break or another control character", k, f.redact(r.Header[k])),
				Hint: "a header cannot carry it: the API's value must go in the query or the body (pagination.in)"}
		}
		req.Header.Set(k, r.Header[k])
	}
	if same {
		for _, k := range slices.Sorted(maps.Keys(src.Headers)) {
			// A child's header with its parent's values, and the position's
			// header (pagination.in: header), are in r.Header: they win,
			// whatever the case either name is spelt in.
			if !slices.ContainsFunc(slices.Collect(maps.Keys(r.Header)), func(h string) bool { return strings.EqualFold(h, k) }) {
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

// failure is the error of a request that failed for good after tries
// attempts: at is its last answer (nil when it got none) and err what
// stopped it (nil when its retries ran out). The message leaves the
// request to the caller, who names it.
func (f *Fetcher) failure(at *attempt, err error, n int) *contract.Error {
	src := f.cfg.Source
	tries := fmt.Sprintf("after %d attempt(s)", n)
	switch {
	case at == nil || err != nil && !errors.Is(err, errUnusable):
		return f.transportError(tries, err)
	case at.err != nil:
		return f.transportError(tries, at.err)
	case at.tooLarge:
		return &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("response body larger than source.max_body (%d bytes)", src.MaxBody),
			Hint: "raise source.max_body if the API's pages are this large, or ask for smaller pages (pagination.size); nothing was written and the checkpoint is intact"}
	case at.tooDeep:
		return &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("response JSON is nested deeper than %d levels", MaxJSONDepth),
			Hint: "the API sent a pathologically nested body; nothing was written and the checkpoint is intact"}
	case at.notJSON:
		msg := fmt.Sprintf("HTTP %d body is not JSON%s", at.status, describeContentType(at.contentType, at.body))
		if ex := f.excerpt(at.body); ex != "" {
			msg += ": " + ex
		}
		return &contract.Error{Class: contract.Permanent, Msg: msg,
			Hint: "the API answered with a page that is not JSON (a login or error page?): check source.url and the credentials; not retried"}
	case at.ambiguous != "":
		return &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("HTTP %d %s", at.status, at.ambiguous),
			Hint: "the API (or a proxy before it) wrote one key twice in one object; idemsync reads neither: nothing of the page was written and the checkpoint is intact (not retried)"}
	case at.refused != "":
		return &contract.Error{Class: contract.Permanent, Msg: fmt.Sprintf("%s: %s", at.refused, at.reason),
			Hint: "the GraphQL server refused the request itself (its query, variables or persisted query): sending it again cannot help; fix source.body (not retried)"}
	case at.status >= 200 && at.status < 300:
		return &contract.Error{Class: contract.Transient, Msg: fmt.Sprintf("%s %s", at.reason, tries),
			Hint: "the API answered 2xx with a body idemsync could not use; the checkpoint is intact, run again later"}
	}
	msg := fmt.Sprintf("HTTP %d %s", at.status, http.StatusText(at.status))
	if len(at.body) > 0 && (jsonDepthExceeds(at.body, MaxJSONDepth) || !gjson.ValidBytes(at.body)) {
		msg += describeContentType(at.contentType, at.body)
	}
	if ex := f.excerpt(at.body); ex != "" {
		msg += ": " + ex
	}
	if slices.Contains(f.cfg.Retry.OnStatus, at.status) {
		return &contract.Error{Class: contract.Transient, Msg: msg + " " + tries, Hint: "the API kept failing; the checkpoint is intact, run again later", Status: at.status}
	}
	return &contract.Error{Class: contract.Permanent, Msg: msg, Hint: f.statusHint(at.status), Status: at.status}
}

func (f *Fetcher) redact(s string) string { return f.cfg.Secrets.Redact(s) }

// excerpt returns at most 200 bytes of a body, on one line, redacted
// before it is cut.
func (f *Fetcher) excerpt(b []byte) string { return f.cfg.Secrets.Excerpt(string(b), 200) }
