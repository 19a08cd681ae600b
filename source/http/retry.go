package httpsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	idsync "github.com/idemsync/idemsync/sync"
)

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

// retryLogger routes go-retryablehttp's log lines to the job's slog logger
// (never the standard library's log package). Its messages repeat what the
// fetcher reports itself (a warning per retry, the final error), so they all
// go out at debug level; every value is redacted with the job's secrets,
// since the library hides URL passwords but not ${VAR} values in a query.
type retryLogger struct {
	log *slog.Logger
	red *idsync.Redactor
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

// newRetryClient is the fetcher's one retrying client, shared by every
// Fetch and worker: the job's retry block as go-retryablehttp's settings,
// and hooks that read what they need from the response (attemptOf) and
// the request's context (callOf), never from state of their own.
func (f *Fetcher) newRetryClient() *retryablehttp.Client {
	rc := f.cfg.Retry
	return &retryablehttp.Client{
		HTTPClient:     f.http,
		Logger:         retryLogger{log: f.logger, red: f.cfg.Secrets},
		RetryWaitMin:   rc.MinWait.Duration,
		RetryWaitMax:   rc.MaxWait.Duration,
		RetryMax:       rc.Attempts - 1,
		CheckRetry:     f.checkRetry,
		Backoff:        f.backoff,
		RequestLogHook: countAttempt,
		ErrorHandler:   f.giveUp,
	}
}

// call is one Fetch, carried to the client's hooks by its request's
// context: the URL it names and how many attempts it has sent.
type call struct {
	url      string
	attempts atomic.Int32
}

type callKey struct{}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// countAttempt is the client's RequestLogHook: it runs before attempt i
// (from 0) of a request is sent.
func countAttempt(_ retryablehttp.Logger, req *http.Request, i int) {
	if c := callOf(req.Context()); c != nil {
		c.attempts.Store(int32(i + 1))
	}
}

// checkRetry is the client's CheckRetry: whether an attempt is retried,
// from its answer alone (docs/job-file.md, "source"). A
// network error or timeout (answered with status 0 by attemptTransport),
// a status of retry.on_status, and a 2xx body cut short, not valid JSON or
// holding an error payload are retried; other failures stop at once with
// errUnusable, or with the error of a request no retry can cure.
func (f *Fetcher) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		return false, err // attemptTransport answers every failure a retry may cure
	}
	at := attemptOf(resp)
	switch {
	case at.err != nil:
		return true, nil
	case at.tooLarge, at.tooDeep, at.notJSON, at.refused != "", at.ambiguous != "":
		return false, errUnusable
	case at.status < 200 || at.status >= 300:
		if slices.Contains(f.cfg.Retry.OnStatus, at.status) {
			return true, nil
		}
		return false, errUnusable
	}
	return at.reason != "", nil
}

// backoff is the client's Backoff: the wait before retry n of resp's
// request (idsync.Backoff, the one schedule, which the engine's refetch of
// a contradicted page uses too), announced before it starts: the
// "retrying request" warning and OnRetry, and after a 429 the pause of
// every request of the fetcher. A request whose run is over waits no
// longer (the client sees its context done) and is not announced.
func (f *Fetcher) backoff(min, max time.Duration, n int, resp *http.Response) time.Duration {
	at := attemptOf(resp)
	if at == nil {
		return idsync.Backoff(min, max, n, 0, false)
	}
	wait := idsync.Backoff(min, max, n, at.retryAfter, at.hasAfter)
	ctx := resp.Request.Context()
	if ctx.Err() != nil {
		return wait
	}
	if at.status == http.StatusTooManyRequests {
		f.pauseAll(wait)
	}
	url := resp.Request.URL.String()
	if c := callOf(ctx); c != nil {
		url = c.url
	}
	f.logger.Warn("retrying request", "url", f.redact(url), "attempt", n+1, "of", f.cfg.Retry.Attempts, "wait", wait.Round(time.Millisecond).String(), "reason", at.reason)
	if f.OnRetry != nil {
		f.OnRetry(RetryEvent{Attempt: n + 1, Wait: wait, Reason: at.reason})
	}
	return wait
}

// giveUp is the client's ErrorHandler: the error of a request that failed
// for good (tries attempts), from its last answer or error.
func (f *Fetcher) giveUp(resp *http.Response, err error, tries int) (*http.Response, error) {
	if resp != nil {
		resp.Body.Close()
	}
	return nil, f.failure(attemptOf(resp), err, tries)
}
