package sync

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

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

var _ PageSource = (*Fetcher)(nil)

// Fetcher requests pages with the job's source and retry settings: classified
// retries with capped exponential backoff and jitter, Retry-After honoured,
// a shared rate limit, bodies bounded by max_body and validated as JSON.
type Fetcher struct {
	job     *Job
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
	// BeforeRequest, when set, is called before each attempt is sent (a
	// failpoint for crash tests).
	BeforeRequest func()
}

// NewFetcher builds the fetcher of a job. The HTTP client verifies TLS unless
// the job opts out, and never carries the job's headers to another origin.
func NewFetcher(job *Job, logger *slog.Logger) *Fetcher {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if job.Source.InsecureSkipTLSVerify {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // explicit per-job opt-out, warned about
		logger.Warn("TLS certificate verification is OFF for this job (source.insecure_skip_tls_verify)")
	}
	f := &Fetcher{job: job, logger: logger, rlog: retryLogger{log: logger, red: job.Secrets}, plain: tr}
	if job.Source.RateLimit > 0 {
		f.limiter = newLimiter(job.Source.RateLimit)
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
	if t.f.BeforeRequest != nil {
		t.f.BeforeRequest()
	}
	return timedRoundTrip(t.base, req, t.f.job.Source.Timeout.Duration)
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

// checkRedirect strips the job's configured headers when a redirect leaves
// the origin of the original request (Go keeps custom headers otherwise).
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if origin(req.URL) != origin(via[0].URL) {
		for k := range f.job.Source.Headers {
			req.Header.Del(k)
		}
		req.Header.Del("Authorization")
		req.Header.Del("Cookie")
		f.logger.Warn("redirect to another origin: configured headers not sent", "to", origin(req.URL))
	}
	return nil
}

func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme + "://" + u.Host)
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
	notJSON     bool // a 2xx body that is no JSON at all (an HTML page)
}

// BuildURL returns the request URL: base (source.url or a next URL) with the
// job's fixed query, then params, added. A next URL keeps its own values:
// fixed query parameters are only added where it lacks them.
func (f *Fetcher) BuildURL(base string, params url.Values, isNext bool) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("invalid URL %q", f.job.Secrets.Redact(base))
	}
	if isNext {
		src, _ := url.Parse(f.job.Source.URL)
		if !u.IsAbs() {
			u = src.ResolveReference(u)
		} else if u.User == nil && src.User != nil && origin(u) == origin(src) {
			u.User = src.User // the source's credentials, on its own origin only
		}
		f.restorePathSecrets(u)
	}
	q := u.Query()
	foreign := isNext && !f.sameOrigin(u.String())
	for _, k := range sortedKeys(f.job.Source.Query) {
		if foreign {
			break // source.query may hold API keys: never to another origin
		}
		if !isNext || !q.Has(k) {
			q.Set(k, f.job.Source.Query[k])
		}
	}
	for k, vs := range params {
		if isNext && q.Has(k) && k != f.job.Pagination.Param {
			continue
		}
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// CheckpointURL returns a next-page URL as it may be stored in the state
// file: without the source.query parameters it repeats with their
// configured values (APIs echo the request's query into their next links,
// and those values may be ${VAR} secrets) and without the source URL's
// credentials. BuildURL puts both back on every request (the credentials
// only on the source's own origin). Other URLs are returned unchanged.
func (f *Fetcher) CheckpointURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	changed := false
	if src, err := url.Parse(f.job.Source.URL); err == nil && src.User != nil && u.User != nil && u.User.String() == src.User.String() {
		u.User, changed = nil, true
	}
	if f.stripPathSecrets(u) {
		changed = true
	}
	q := u.Query()
	for k, v := range f.job.Source.Query {
		if vs := q[k]; len(vs) == 1 && vs[0] == v {
			q.Del(k)
			u.RawQuery, changed = q.Encode(), true
		}
	}
	if !changed {
		return raw
	}
	return u.String()
}

// Fetch requests rawURL with retries and returns the page. Errors are *Error
// with exit code 3 for transient failures that exhausted their retries and 1
// for permanent ones; both name the status or cause and a body excerpt with
// secrets redacted. A cancelled ctx returns ctx's error.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Response, error) {
	src := f.job.Source
	rc := f.job.Retry
	st := &attempt{}
	var body io.Reader
	if src.Body != "" {
		body = strings.NewReader(src.Body)
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, src.Method, rawURL, body)
	if err != nil {
		return nil, Errorf(ExitPermanent, "build request for %s: invalid URL", f.redact(rawURL))
	}
	if f.sameOrigin(rawURL) {
		for _, k := range sortedKeys(src.Headers) {
			req.Header.Set(k, src.Headers[k])
		}
	} else {
		f.warnForeignOrigin(rawURL)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if src.Body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "idemsync/"+Version)
	}

	c := &retryablehttp.Client{
		HTTPClient:   f.http,
		Logger:       f.rlog,
		RetryWaitMin: rc.MinWait.Duration,
		RetryWaitMax: rc.MaxWait.Duration,
		RetryMax:     rc.Attempts - 1,
		CheckRetry: func(ctx context.Context, resp *http.Response, err error) (bool, error) {
			return f.checkRetry(ctx, st, resp, err)
		},
		Backoff: func(min, max time.Duration, n int, resp *http.Response) time.Duration {
			wait := Backoff(min, max, n, st.retryAfter, st.hasAfter)
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
	tries := fmt.Sprintf("after %d attempt(s)", st.n)
	switch {
	case st.tooLarge:
		return nil, Errorf(ExitPermanent, "%s: response body larger than source.max_body (%d bytes)", where, src.MaxBody)
	case st.tooDeep:
		return nil, &Error{Code: ExitPermanent, Msg: fmt.Sprintf("%s: response JSON is nested deeper than %d levels", where, MaxJSONDepth),
			Hint: "the API sent a pathologically nested body; nothing was written and the checkpoint is intact"}
	case st.notJSON:
		msg := fmt.Sprintf("%s: HTTP %d body is not JSON%s", where, st.status, describeContentType(st.contentType, st.body))
		if ex := excerpt(st.body); ex != "" {
			msg += ": " + f.redact(ex)
		}
		return nil, &Error{Code: ExitPermanent, Msg: msg,
			Hint: "the API answered with a page that is not JSON (a login or error page?): check source.url and the credentials; not retried"}
	case err != nil && st.status == 0:
		return nil, f.transportError(where, tries, err)
	case st.reason != "" && st.status >= 200 && st.status < 300:
		return nil, &Error{Code: ExitTransient, Msg: fmt.Sprintf("%s: %s %s", where, st.reason, tries),
			Hint: "the API answered 2xx with a body idemsync could not use; the checkpoint is intact, run again later"}
	case st.status < 200 || st.status >= 300:
		msg := fmt.Sprintf("%s: HTTP %d %s", where, st.status, http.StatusText(st.status))
		if len(st.body) > 0 && (jsonDepthExceeds(st.body, MaxJSONDepth) || !gjson.ValidBytes(st.body)) {
			msg += describeContentType(st.contentType, st.body)
		}
		if ex := excerpt(st.body); ex != "" {
			msg += ": " + f.redact(ex)
		}
		if slices.Contains(rc.OnStatus, st.status) {
			return nil, &Error{Code: ExitTransient, Msg: msg + " " + tries, Hint: "the API kept failing; the checkpoint is intact, run again later"}
		}
		return nil, &Error{Code: ExitPermanent, Msg: msg, Hint: f.statusHint(st.status)}
	}
	out := &Response{URL: rawURL, Status: st.status, Header: resp.Header, Body: st.body, Attempts: st.n}
	if st.status == http.StatusNoContent {
		out.Body = nil // an empty page
		return out, nil
	}
	recs, err := f.records(st.body)
	if err != nil {
		return nil, Errorf(ExitPermanent, "%s: %w", where, err)
	}
	out.Records = recs
	out.Raw = f.rawCount(st.body, recs)
	return out, nil
}

// checkRetry classifies one attempt and reads a successful body, so that
// truncated or invalid JSON is retried like any transient failure.
func (f *Fetcher) checkRetry(ctx context.Context, st *attempt, resp *http.Response, err error) (bool, error) {
	st.n++
	st.status, st.body, st.reason, st.hasAfter, st.retryAfter, st.contentType = 0, nil, "", false, 0, ""
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
	limit := int64(f.job.Source.MaxBody)
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
		if slices.Contains(f.job.Retry.OnStatus, resp.StatusCode) {
			st.reason = fmt.Sprintf("HTTP %d", resp.StatusCode)
			return true, nil
		}
		return false, nil
	}
	if rerr != nil {
		st.reason = "body cut short: " + f.redact(shortErr(rerr))
		return true, nil
	}
	if resp.StatusCode == http.StatusNoContent {
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
	if p := f.job.Source.ErrorPath; p != "" {
		if v := gjson.GetBytes(data, p); v.Exists() && v.Type != gjson.Null && v.String() != "" && v.Raw != "false" && v.Raw != "{}" && v.Raw != "[]" {
			st.reason = fmt.Sprintf("error payload at %s: %s", p, f.redact(excerpt([]byte(v.Raw))))
			return true, nil
		}
	}
	return false, nil
}

// MaxJSONDepth is the deepest nesting of arrays and objects a response body
// may have, the same limit as encoding/json's. A deeper body is a permanent
// error rather than a stack overflow.
const MaxJSONDepth = 10000

// jsonDepthExceeds reports whether data nests arrays and objects more than
// limit levels deep, ignoring brackets inside strings. It does not validate.
func jsonDepthExceeds(data []byte, limit int) bool {
	depth, inStr := 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			depth++
			if depth > limit {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}

func describeContentType(ct string, body []byte) string {
	mt, _, _ := mime.ParseMediaType(ct)
	if mt == "" {
		mt = "none"
	}
	if len(body) == 0 {
		return " (empty body, Content-Type " + mt + ")"
	}
	return " (Content-Type " + mt + ")"
}

// records extracts the records array from a valid JSON body.
func (f *Fetcher) records(body []byte) ([]gjson.Result, error) {
	path := f.job.Source.Records
	v := gjson.ParseBytes(body)
	where := "the response body"
	if path != "" {
		v = v.Get(path)
		where = "records path " + path
		if !v.Exists() {
			return nil, fmt.Errorf("records path %s not found in the response (top-level keys: %s)", path, topKeys(body))
		}
		// gjson answers a path into a top-level string with a slice of the
		// string's text (`"[["` at "0" is `["`): never take that for records.
		if v.IsArray() && !gjson.Valid(v.Raw) {
			return nil, fmt.Errorf("records path %s does not select JSON in the response (the body is %s)", path, kindOf(gjson.ParseBytes(body)))
		}
	}
	switch {
	case v.Type == gjson.Null:
		return nil, nil
	case !v.IsArray():
		return nil, fmt.Errorf("%s is %s, not an array of records", where, kindOf(v))
	}
	return v.Array(), nil
}

func topKeys(body []byte) string {
	var keys []string
	gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool {
		keys = append(keys, k.String())
		return len(keys) < 10
	})
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

func kindOf(v gjson.Result) string {
	switch {
	case v.IsObject():
		return "an object"
	case v.Type == gjson.String:
		return "a string"
	case v.Type == gjson.Number:
		return "a number"
	case v.Type == gjson.True, v.Type == gjson.False:
		return "a boolean"
	}
	return "null"
}

func (f *Fetcher) transportError(where, tries string, err error) error {
	if permanentTransportError(err) {
		return &Error{Code: ExitPermanent, Msg: fmt.Sprintf("%s: %s", where, f.redact(shortErr(err))), Hint: f.redact(Hint(err))}
	}
	return &Error{Code: ExitTransient, Msg: fmt.Sprintf("%s: %s %s", where, f.redact(shortErr(err)), tries),
		Hint: "network error; the checkpoint is intact, run again later"}
}

func permanentTransportError(err error) bool {
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	var ce x509.CertificateInvalidError
	var ve *tls.CertificateVerificationError
	var pe *Error
	return errors.As(err, &ue) || errors.As(err, &he) || errors.As(err, &ce) || errors.As(err, &ve) ||
		errors.As(err, &pe) && pe.Code == ExitPermanent ||
		strings.Contains(err.Error(), "stopped after 10 redirects") ||
		strings.Contains(err.Error(), "unsupported protocol scheme")
}

// shortErr drops the "Get \"URL\": " prefix Go puts on client errors, since
// callers name the request themselves.
func shortErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}

func (f *Fetcher) redact(s string) string { return f.job.Secrets.Redact(s) }

// retryLogger routes go-retryablehttp's log lines to the job's slog logger
// (never the standard library's log package). Its messages repeat what the
// fetcher reports itself (a warning per retry, the final error), so they all
// go out at debug level; every value is redacted with the job's secrets,
// since the library hides URL passwords but not ${VAR} values in a query.
type retryLogger struct {
	log *slog.Logger
	red *Redactor
}

var _ retryablehttp.LeveledLogger = retryLogger{}

func (l retryLogger) Error(msg string, kv ...any) { l.debug(msg, kv) }
func (l retryLogger) Warn(msg string, kv ...any)  { l.debug(msg, kv) }
func (l retryLogger) Info(msg string, kv ...any)  { l.debug(msg, kv) }
func (l retryLogger) Debug(msg string, kv ...any) { l.debug(msg, kv) }

func (l retryLogger) debug(msg string, kv []any) {
	if l.log == nil || !l.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	attrs := make([]any, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		attrs = append(attrs, slog.String(fmt.Sprint(kv[i]), l.red.Redact(fmt.Sprint(kv[i+1]))))
	}
	l.log.Debug("http client: "+l.red.Redact(msg), attrs...)
}

// excerpt returns at most 200 bytes of a body, on one line.
func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Backoff returns the wait before retry n (from 0): Retry-After when the
// server gave one (capped at max), else a random wait between min and
// min·2ⁿ capped at max (exponential backoff with full jitter).
func Backoff(min, max time.Duration, n int, retryAfter time.Duration, hasAfter bool) time.Duration {
	if hasAfter && retryAfter > 0 {
		return time.Duration(minInt64(int64(retryAfter), int64(max)))
	}
	ceil := min
	for i := 0; i < n && ceil < max; i++ {
		ceil *= 2
	}
	if ceil > max {
		ceil = max
	}
	if ceil <= min {
		return min
	}
	return min + time.Duration(rand.Int64N(int64(ceil-min)+1))
}

func minInt64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

// ParseRetryAfter reads a Retry-After header: delay seconds or an HTTP date
// (relative to now). A date in the past gives 0, true; garbage gives false.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := parseUint(v); err == nil {
		if n > 1<<31 {
			n = 1 << 31
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}

func parseUint(s string) (int64, error) {
	if s == "" || len(s) > 12 {
		return 0, errors.New("not a number")
	}
	var n int64
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, errors.New("not a number")
		}
		n = n*10 + int64(r-'0')
	}
	return n, nil
}
